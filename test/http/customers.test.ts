import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';

const CUSTOMER_ID = /^cust_[A-Za-z0-9_-]{16,}$/;

describe('customers', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const create = (key: string, body: unknown) => t.request('POST', '/api/v1/customers', { key, body });
  const get = (key: string, id: string) => t.request('GET', `/api/v1/customers/${id}`, { key });
  const patch = (key: string, id: string, body: unknown) => t.request('PATCH', `/api/v1/customers/${id}`, { key, body });
  const list = (key: string, query = '') => t.request('GET', `/api/v1/customers${query}`, { key });

  /** The target of a `Link: <…>; rel="next"` header, or null when there is none. */
  const nextLink = (response: TestResponse) => /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1] ?? null;


  async function createOk(key: string, body: Record<string, unknown>) {
    const response = await create(key, body);
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  describe('creating', () => {
    it('creates a customer with a zero balance, no tier and millisecond timestamps', async () => {
      const { private_key: key } = await t.business();
      const response = await create(key, {
        email: 'ada@example.com',
        phone: '+44 20 7946 0958',
        first_name: 'Ada',
        last_name: 'Lovelace',
        external_reference: 'user-1',
        metadata: { source: 'pos', nested: { a: [1, 2] } },
      });
      expect(response.status).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(CUSTOMER_ID),
        email: 'ada@example.com',
        phone: '+44 20 7946 0958',
        first_name: 'Ada',
        last_name: 'Lovelace',
        external_reference: 'user-1',
        metadata: { source: 'pos', nested: { a: [1, 2] } },
        points_balance: 0,
        lifetime_earned: 0,
        lifetime_redeemed: 0,
        points_pending: 0,
        lifetime_expired: 0,
        next_expiring: null,
        tier: null,
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
      });
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('accepts a customer identified by phone only', async () => {
      const { private_key: key } = await t.business();
      const body = await createOk(key, { phone: '+1 555 0100' });
      expect(body).toMatchObject({ email: null, phone: '+1 555 0100', external_reference: null, metadata: {} });
    });

    it('requires an email or a phone', async () => {
      const { private_key: key } = await t.business();
      expectError(await create(key, { first_name: 'Nobody', last_name: 'Known' }), 400, 'validation_error');
      expectError(await create(key, {}), 400, 'validation_error');
      expect((await list(key)).body).toEqual([]);
    });

    it('refuses an invalid email with a validation detail on email', async () => {
      const { private_key: key } = await t.business();
      for (const email of ['not-an-email', 'a@', '@example.com', 'two@@example.com', '']) {
        const response = await create(key, { email });
        expectError(response, 400, 'validation_error');
        expect(response.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'email' })]));
      }
      expect((await list(key)).body).toEqual([]);
    });

    it('limits metadata to 8 KiB serialized and external_reference to 255 characters', async () => {
      const { private_key: key } = await t.business();
      const fits = { blob: 'x'.repeat(8 * 1024 - 20) };
      expect(Buffer.byteLength(JSON.stringify(fits))).toBeLessThanOrEqual(8 * 1024);
      await createOk(key, { email: 'fits@example.com', metadata: fits, external_reference: 'r'.repeat(255) });
      expectError(await create(key, { email: 'big@example.com', metadata: { blob: 'x'.repeat(8 * 1024) } }), 400, 'validation_error');
      expectError(await create(key, { email: 'long@example.com', external_reference: 'r'.repeat(256) }), 400, 'validation_error');
      expectError(await create(key, { email: 'array@example.com', metadata: ['not', 'an', 'object'] }), 400, 'validation_error');
      expect((await list(key)).body).toHaveLength(1);
    });

    it('refuses unknown fields so typos surface', async () => {
      const { private_key: key } = await t.business();
      expectError(await create(key, { email: 'typo@example.com', frist_name: 'Ada' }), 400, 'validation_error');
    });

    it('refuses an email already used in the business, whatever its case, naming the holder', async () => {
      const { private_key: key } = await t.business();
      const holder = await createOk(key, { email: 'Grace@Example.com' });
      const response = await create(key, { email: 'grace@EXAMPLE.COM', first_name: 'Other' });
      expectError(response, 409, 'customer_exists');
      expect(response.body.customer_id).toBe(holder.id);
      expect((await list(key)).body).toHaveLength(1);
    });

    it('refuses an external_reference already used in the business, naming the holder', async () => {
      const { private_key: key } = await t.business();
      const holder = await createOk(key, { email: 'one@example.com', external_reference: 'crm-42' });
      const response = await create(key, { email: 'two@example.com', external_reference: 'crm-42' });
      expectError(response, 409, 'customer_exists');
      expect(response.body.customer_id).toBe(holder.id);
      // The e-mail of the refused request was not taken either.
      await createOk(key, { email: 'two@example.com' });
    });

    it('allows the same email and external_reference in another business', async () => {
      const a = await t.business();
      const b = await t.business();
      const inA = await createOk(a.private_key, { email: 'shared@example.com', external_reference: 'ext-1' });
      const inB = await createOk(b.private_key, { email: 'shared@example.com', external_reference: 'ext-1' });
      expect(inB.id).not.toBe(inA.id);
    });
  });

  describe('reading', () => {
    it('returns one customer exactly as created', async () => {
      const { private_key: key, public_key } = await t.business();
      const created = await createOk(key, { email: 'read@example.com', metadata: { k: 'v' } });
      const response = await get(key, created.id);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(created);
      expect((await get(public_key, created.id)).body).toEqual(created);
    });

    it('answers 404 customer_not_found for an unknown id', async () => {
      const { private_key: key } = await t.business();
      expectError(await get(key, 'cust_doesnotexist000000'), 404, 'customer_not_found');
      expectError(await get(key, 'nonsense'), 404, 'customer_not_found');
    });
  });

  describe('updating', () => {
    it('changes the given fields, replaces metadata whole and returns the updated customer', async () => {
      const { private_key: key } = await t.business();
      const created = await createOk(key, {
        email: 'before@example.com',
        first_name: 'Before',
        last_name: 'Same',
        metadata: { a: 1, b: 2 },
      });
      const response = await patch(key, created.id, { first_name: 'After', phone: '+1 555 0199', metadata: { c: 3 } });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        ...created,
        first_name: 'After',
        phone: '+1 555 0199',
        metadata: { c: 3 },
        updated_at: expect.stringMatching(ISO_MS),
      });
      expect(Date.parse(response.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
      expect((await get(key, created.id)).body).toEqual(response.body);
    });

    it('validates the changes like a creation does', async () => {
      const { private_key: key } = await t.business();
      const created = await createOk(key, { email: 'valid@example.com' });
      expectError(await patch(key, created.id, { email: 'nope' }), 400, 'validation_error');
      expectError(await patch(key, created.id, { nickname: 'x' }), 400, 'validation_error');
      expect((await get(key, created.id)).body).toEqual(created);
    });

    it('answers 404 for an unknown customer', async () => {
      const { private_key: key } = await t.business();
      expectError(await patch(key, 'cust_doesnotexist000000', { first_name: 'X' }), 404, 'customer_not_found');
    });

    it('refuses an email held by another customer, whatever its case, naming the holder', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'a@example.com' });
      const b = await createOk(key, { email: 'b@example.com' });
      const response = await patch(key, a.id, { email: 'B@example.com' });
      expectError(response, 409, 'customer_exists');
      expect(response.body.customer_id).toBe(b.id);
      expect((await get(key, a.id)).body.email).toBe('a@example.com');
    });

    it('refuses an external_reference held by another customer', async () => {
      const { private_key: key } = await t.business();
      await createOk(key, { email: 'x@example.com', external_reference: 'ref-x' });
      const y = await createOk(key, { email: 'y@example.com', external_reference: 'ref-y' });
      const response = await patch(key, y.id, { external_reference: 'ref-x' });
      expectError(response, 409, 'customer_exists');
      expect((await get(key, y.id)).body.external_reference).toBe('ref-y');
    });

    it('frees the old email when it changes, and takes the new one', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'old@example.com' });
      const patched = await patch(key, a.id, { email: 'new@example.com' });
      expect(patched.status).toBe(200);
      expect(patched.body.email).toBe('new@example.com');

      const reuse = await create(key, { email: 'OLD@example.com' });
      expect(reuse.status, reuse.text).toBe(201);

      const taken = await create(key, { email: 'new@example.com' });
      expectError(taken, 409, 'customer_exists');
      expect(taken.body.customer_id).toBe(a.id);
    });

    it('frees the old external_reference when it changes', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'ext-a@example.com', external_reference: 'old-ref' });
      expect((await patch(key, a.id, { external_reference: 'new-ref' })).status).toBe(200);
      await createOk(key, { email: 'ext-b@example.com', external_reference: 'old-ref' });
      expectError(await create(key, { email: 'ext-c@example.com', external_reference: 'new-ref' }), 409, 'customer_exists');
    });

    it('lets a customer change only the case of its own email and keeps it reserved', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'case@example.com' });
      const response = await patch(key, a.id, { email: 'Case@Example.COM' });
      expect(response.status, response.text).toBe(200);
      expect(response.body.email).toBe('Case@Example.COM');

      const other = await create(key, { email: 'CASE@example.com' });
      expectError(other, 409, 'customer_exists');
      expect(other.body.customer_id).toBe(a.id);
      // The list filter finds it under its new spelling, in any case.
      expect((await list(key, '?email=case%40example.com')).body.map((c: { id: string }) => c.id)).toEqual([a.id]);
    });

    it('frees an email cleared with null, the customer staying reachable by phone', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'clear@example.com', phone: '+1 555 0142' });
      const cleared = await patch(key, a.id, { email: null });
      expect(cleared.status, cleared.text).toBe(200);
      expect(cleared.body).toMatchObject({ email: null, phone: '+1 555 0142' });
      const reuse = await create(key, { email: 'Clear@example.com' });
      expect(reuse.status, reuse.text).toBe(201);
    });

    it('refuses a change that would leave the customer with neither email nor phone', async () => {
      const { private_key: key } = await t.business();
      const byEmail = await createOk(key, { email: 'only-email@example.com' });
      expectError(await patch(key, byEmail.id, { email: null }), 400, 'validation_error');
      const byPhone = await createOk(key, { phone: '+1 555 0143' });
      expectError(await patch(key, byPhone.id, { phone: null }), 400, 'validation_error');
      const both = await createOk(key, { email: 'both@example.com', phone: '+1 555 0144' });
      expectError(await patch(key, both.id, { email: null, phone: null }), 400, 'validation_error');
      expect((await get(key, byEmail.id)).body).toEqual(byEmail);
      expect((await get(key, byPhone.id)).body).toEqual(byPhone);
      expect((await get(key, both.id)).body).toEqual(both);
    });

    it('accepts a change to the email the customer already has', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'same@example.com', first_name: 'Same' });
      const response = await patch(key, a.id, { email: 'same@example.com' });
      expect(response.status).toBe(200);
      expect(response.body.email).toBe('same@example.com');
    });
  });

  describe('listing', () => {
    it('answers an empty array for a business without customers', async () => {
      const { private_key: key } = await t.business();
      const response = await list(key);
      expect(response.status).toBe(200);
      expect(response.body).toEqual([]);
      expect(response.headers.get('link')).toBeNull();
    });

    it('lists customers oldest first as full customer objects', async () => {
      const { private_key: key } = await t.business();
      const created = [];
      for (let i = 0; i < 5; i++) created.push(await createOk(key, { email: `order-${i}@example.com` }));
      const response = await list(key);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(created);
    });

    it('filters by email case-insensitively, by phone and by external_reference', async () => {
      const { private_key: key } = await t.business();
      const a = await createOk(key, { email: 'Filter.A@example.com', phone: '+1 555 0001', external_reference: 'ext-a' });
      const b = await createOk(key, { email: 'filter.b@example.com', phone: '+1 555 0002', external_reference: 'ext-b' });
      const c = await createOk(key, { phone: '+1 555 0002' });
      const ids = async (query: string) => {
        const response = await list(key, query);
        expect(response.status, response.text).toBe(200);
        return response.body.map((customer: { id: string }) => customer.id);
      };
      expect(await ids('?email=filter.a%40example.com')).toEqual([a.id]);
      expect(await ids('?email=FILTER.A%40EXAMPLE.COM')).toEqual([a.id]);
      expect(await ids('?email=FILTER.B%40example.com')).toEqual([b.id]);
      expect(await ids('?email=nobody%40example.com')).toEqual([]);
      expect(await ids(`?phone=${encodeURIComponent('+1 555 0002')}`)).toEqual([b.id, c.id]);
      expect(await ids(`?phone=${encodeURIComponent('+1 555 0001')}`)).toEqual([a.id]);
      expect(await ids('?external_reference=ext-b')).toEqual([b.id]);
      expect(await ids('?external_reference=EXT-B')).toEqual([]);
      expect(await ids(`?phone=${encodeURIComponent('+1 555 0002')}&external_reference=ext-b`)).toEqual([b.id]);
    });

    it('refuses an unknown query parameter', async () => {
      const { private_key: key } = await t.business();
      expectError(await list(key, '?emial=a%40example.com'), 400, 'validation_error');
      expectError(await list(key, '?offset=10'), 400, 'validation_error');
    });

    describe('pagination', () => {
      const TOTAL = 53;
      let key: string;
      let all: Array<{ id: string }>;

      beforeAll(async () => {
        key = (await t.business()).private_key;
        all = [];
        for (let i = 0; i < TOTAL; i++) all.push(await createOk(key, { email: `page-${i}@example.com` }));
      });

      it('answers 50 customers by default with a Link to the rest', async () => {
        const first = await list(key);
        expect(first.body).toEqual(all.slice(0, 50));
        const next = nextLink(first);
        expect(next).not.toBeNull();
        const rest = await t.request('GET', next!, { key });
        expect(rest.status).toBe(200);
        expect(rest.body).toEqual(all.slice(50));
        expect(nextLink(rest)).toBeNull();
      });

      it('accepts limit 1 to 200 and refuses 0, 201 and non-numbers', async () => {
        expect((await list(key, '?limit=200')).body).toHaveLength(TOTAL);
        expect((await list(key, '?limit=1')).body).toEqual(all.slice(0, 1));
        expectError(await list(key, '?limit=201'), 400, 'validation_error');
        expectError(await list(key, '?limit=0'), 400, 'validation_error');
        expectError(await list(key, '?limit=-1'), 400, 'validation_error');
        expectError(await list(key, '?limit=ten'), 400, 'validation_error');
        expectError(await list(key, '?limit=2.5'), 400, 'validation_error');
      });

      it('starts after the given customer', async () => {
        const response = await list(key, `?limit=3&starting_after=${all[9]!.id}`);
        expect(response.body).toEqual(all.slice(10, 13));
        const last = await list(key, `?starting_after=${all[TOTAL - 1]!.id}`);
        expect(last.body).toEqual([]);
        expect(nextLink(last)).toBeNull();
      });

      it('refuses an unknown starting_after id', async () => {
        expectError(await list(key, '?starting_after=cust_doesnotexist000000'), 400, 'validation_error');
      });

      it('gives a next Link only while more remain', async () => {
        const exact = await list(key, `?limit=${TOTAL}`);
        expect(exact.body).toHaveLength(TOTAL);
        expect(nextLink(exact)).toBeNull();

        const oneShort = await list(key, `?limit=${TOTAL - 1}`);
        expect(oneShort.body).toHaveLength(TOTAL - 1);
        const next = nextLink(oneShort);
        expect(next).not.toBeNull();
        const tail = await t.request('GET', next!, { key });
        expect(tail.body).toEqual(all.slice(TOTAL - 1));
        expect(nextLink(tail)).toBeNull();
      });

      it('walks every customer exactly once by following the Links, keeping the limit', async () => {
        const seen: string[] = [];
        let path: string | null = '/api/v1/customers?limit=7';
        let pages = 0;
        while (path) {
          const page: TestResponse = await t.request('GET', path, { key });
          expect(page.status).toBe(200);
          expect(page.body.length).toBeLessThanOrEqual(7);
          seen.push(...page.body.map((c: { id: string }) => c.id));
          path = nextLink(page);
          if (path) expect(new URL(path, 'http://x').searchParams.get('limit')).toBe('7');
          pages++;
          expect(pages).toBeLessThanOrEqual(Math.ceil(TOTAL / 7));
        }
        expect(pages).toBe(Math.ceil(TOTAL / 7));
        expect(seen).toEqual(all.map((c) => c.id));
      });

      it('keeps filters in the next Link', async () => {
        const phoneKey = (await t.business()).private_key;
        const same = [];
        for (let i = 0; i < 5; i++) same.push((await createOk(phoneKey, { phone: '+1 555 0123' })).id);
        await createOk(phoneKey, { phone: '+1 555 9999' });
        const seen: string[] = [];
        let path: string | null = `/api/v1/customers?limit=2&phone=${encodeURIComponent('+1 555 0123')}`;
        while (path) {
          const page: TestResponse = await t.request('GET', path, { key: phoneKey });
          expect(page.status).toBe(200);
          seen.push(...page.body.map((c: { id: string }) => c.id));
          path = nextLink(page);
        }
        expect(seen).toEqual(same);
      });
    });
  });
});
