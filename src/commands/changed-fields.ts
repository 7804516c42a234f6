import { sameJson } from '../json-equality.js';

/**
 * The fields of `changes` that are given (not undefined) and differ from `current`: what an
 * update event carries. An update that changes nothing produces no event.
 */
export function changedFields<T extends object>(current: T, changes: Partial<T>): Partial<T> {
  return Object.fromEntries(
    Object.entries(changes).filter(([field, value]) => value !== undefined && !sameJson(current[field as keyof T], value)),
  ) as Partial<T>;
}
