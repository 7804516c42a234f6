import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EventCatalogue } from '../../src/events/catalogue.js';
import { renderEventsDoc } from '../../scripts/events-doc/render-events-doc.js';

describe('docs/events.md', () => {
  const committed = readFileSync(new URL('../../docs/events.md', import.meta.url), 'utf8');

  it('is exactly what `npm run docs:events` generates from the catalogue (regenerate it if this fails)', () => {
    expect(committed).toBe(renderEventsDoc());
  });

  it('has a section for every event type of the catalogue, with its stream', () => {
    for (const type of Object.keys(EventCatalogue)) {
      expect(committed).toMatch(new RegExp(`\\n### ${type}\\n[\\s\\S]*?- Stream: \``));
    }
  });
});
