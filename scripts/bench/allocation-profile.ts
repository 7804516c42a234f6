/**
 * Where a span's allocations come from, garbage included: V8's sampling heap profiler with the
 * objects later collected kept in its samples (by default it reports only what is still alive,
 * which says nothing of what makes the collector run). Start before the span, stop after it.
 */
import type { Session } from 'node:inspector/promises';

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

export interface AllocationSummary {
  /** The profile as V8 gave it (a `.heapprofile`: DevTools opens it). */
  profile: unknown;
  totalBytes: number;
  /** Bytes allocated in each function itself, largest first. */
  functions: Array<{ name: string; bytes: number; share: number }>;
}

export async function startAllocationSampling(session: Session): Promise<void> {
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
}

export async function stopAllocationSampling(session: Session, top = 20): Promise<AllocationSummary> {
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: AllocationNode } };
  const bytes = new Map<string, number>();
  let totalBytes = 0;
  const visit = (node: AllocationNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || '(anonymous)'} ${url.replace(/.*\/(src|scripts|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    bytes.set(name, (bytes.get(name) ?? 0) + node.selfSize);
    totalBytes += node.selfSize;
    for (const child of node.children) visit(child);
  };
  visit(profile.head);
  const functions = [...bytes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, n]) => ({ name, bytes: n, share: totalBytes === 0 ? 0 : n / totalBytes }));
  return { profile, totalBytes, functions };
}
