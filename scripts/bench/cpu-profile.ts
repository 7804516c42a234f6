import { readFile } from 'node:fs/promises';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  /** Busy time: everything but `(idle)`. */
  busyMs: number;
  functions: SelfTime[];
  /** Self time by where the code lives: a package under node_modules, the service's src/, node internals. */
  places: SelfTime[];
  /** For the top few functions: the heaviest call paths into them (nearest caller first). */
  callers: Array<{ name: string; paths: SelfTime[] }>;
}

function place(url: string): string {
  if (!url) return '(native / VM)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node internals';
  const src = /\/((?:src|dist)\/.*)$/.exec(url);
  return src ? 'service (src/ or dist/)' : url;
}

function shortUrl(url: string): string {
  const pkg = /node_modules\/(.*)$/.exec(url);
  if (pkg) return pkg[1]!;
  const src = /\/((?:src|dist|scripts)\/.*)$/.exec(url);
  if (src) return src[1]!;
  return url ? path.basename(url) : '';
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  return url ? `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}` : functionName || '(anonymous)';
}

/** Self time per function (summed over every call site) from a `.cpuprofile` written by `node --cpu-prof`. */
export async function summarizeProfile(file: string, top = 15): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

  const fn = new Map<string, number>();
  const where = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url } = node.callFrame;
    total += us;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const name = frameName(node);
    fn.set(name, (fn.get(name) ?? 0) + us);
    const p = functionName.startsWith('(') ? functionName : place(url);
    where.set(p, (where.get(p) ?? 0) + us);
  }
  const busy = total - idle;
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  /** Up to `depth` callers of a node that are the service's or a package's code (node internals skipped). */
  const callerPath = (id: number, depth: number) => {
    const names: string[] = [];
    for (let p = parent.get(id); p !== undefined && names.length < depth; p = parent.get(p)) {
      const node = byId.get(p)!;
      const { url } = node.callFrame;
      if (url && !url.startsWith('node:') && !/^[a-z_]+$/i.test(url)) names.push(frameName(node));
    }
    return names.join(' ← ') || '(no JavaScript caller)';
  };
  const rank = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, share: busy > 0 ? us / busy : 0 }));
  const functions = rank(fn, top);
  const callers = functions.slice(0, 3).filter((f) => !f.name.startsWith('(')).map((f) => {
    const paths = new Map<string, number>();
    for (const [id, us] of selfUs) {
      const node = byId.get(id)!;
      if (frameName(node) !== f.name) continue;
      const key = callerPath(id, 3);
      paths.set(key, (paths.get(key) ?? 0) + us);
    }
    return { name: f.name, paths: rank(paths, 5) };
  });
  return { totalMs: total / 1000, busyMs: busy / 1000, functions, places: rank(where, 12), callers };
}
