import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

import type { Me } from './types.js';

export type { Me };

export const MeContext = createContext<Me | null>(null);

/** The signed-in key; pages render only once it is known. */
export function useMe() {
  const me = useContext(MeContext);
  if (!me) throw new Error('useMe outside a signed-in page');
  return {
    me,
    readOnly: me.type === 'public',
    /** Whether this key may do what needs `permission` (public keys never write). */
    can: (permission: string) => me.permissions.includes(permission) && (me.type === 'private' || permission.endsWith(':read')),
  };
}
