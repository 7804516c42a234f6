/**
 * The signed-in key lives in sessionStorage only (CONTRACT.md §14): never in a URL, a log or
 * localStorage. It goes out as `X-API-Key` on each request and is forgotten on sign-out.
 */
const STORAGE_KEY = 'loyalty.dashboard.apiKey';

export const session = {
  key: (): string | null => sessionStorage.getItem(STORAGE_KEY),
  signIn: (key: string) => sessionStorage.setItem(STORAGE_KEY, key),
  signOut: () => sessionStorage.removeItem(STORAGE_KEY),
};
