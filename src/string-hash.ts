/**
 * FNV-1a, 32 bits, of a string's UTF-16 code units: cheap, stable across processes and versions,
 * and good enough to spread ids (not for anything an attacker may aim at collisions against,
 * unless a collision only costs time).
 */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}
