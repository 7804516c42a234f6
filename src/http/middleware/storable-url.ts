import { createMiddleware } from 'hono/factory';
import { errors, type ValidationIssue } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { unstorableText } from './strict-json.js';

/**
 * Refuses a path or query that no store can keep (CONTRACT.md §3): NUL or an unpaired surrogate in
 * a path segment, a query parameter's name or its value, and percent-encoding that is not UTF-8.
 * PostgreSQL would otherwise fail on them as an internal error.
 */
export const storableUrl = createMiddleware<AppEnv>(async (c, next) => {
  // Only percent-encoding carries NUL, a surrogate or broken UTF-8 past Node's HTTP parser: a URL
  // without any (the common case) is not parsed again.
  if (!c.req.url.includes('%')) return next();
  const url = new URL(c.req.url);
  const issues: ValidationIssue[] = [];
  for (const segment of url.pathname.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      issues.push({ path: 'path', message: 'is not valid percent-encoded UTF-8' });
      break;
    }
    const problem = unstorableText(decoded);
    if (problem) {
      issues.push({ path: 'path', message: problem });
      break;
    }
  }
  for (const [name, value] of url.searchParams) {
    const problem = unstorableText(name) ?? unstorableText(value);
    if (problem) issues.push({ path: `query.${unstorableText(name) ? '(name)' : name}`, message: problem });
  }
  if (issues.length > 0) throw errors.validation(issues);
  return next();
});
