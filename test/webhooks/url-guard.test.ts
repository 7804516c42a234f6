import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { assertDeliverableUrl, isForbiddenAddress } from '../../src/webhooks/url-guard.js';

/** Runs the guard and returns the validation error it threw (fails the test if it accepted). */
async function refusal(url: string, allowPrivate: boolean): Promise<ApiError> {
  try {
    const accepted = await assertDeliverableUrl(url, allowPrivate);
    throw new Error(`accepted ${url} as ${accepted.href}`);
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.status).toBe(400);
    expect(apiError.code).toBe('validation_error');
    expect(apiError.extras.details).toEqual([expect.objectContaining({ path: 'url', message: expect.any(String) })]);
    return apiError;
  }
}

describe('webhook address guard', () => {
  describe('isForbiddenAddress', () => {
    it.each([
      ['127.0.0.1', 'IPv4 loopback'],
      ['127.255.255.254', 'the whole 127/8 loopback block'],
      ['10.0.0.1', 'private 10/8'],
      ['172.16.0.1', 'private 172.16/12'],
      ['172.31.255.255', 'the end of 172.16/12'],
      ['192.168.1.10', 'private 192.168/16'],
      ['169.254.169.254', 'the cloud metadata address (link-local)'],
      ['100.64.0.1', 'carrier-grade NAT'],
      ['0.0.0.0', 'the unspecified address'],
      ['255.255.255.255', 'broadcast'],
      ['224.0.0.1', 'multicast'],
      ['::1', 'IPv6 loopback'],
      ['::', 'the IPv6 unspecified address'],
      ['fe80::1', 'IPv6 link-local'],
      ['fc00::1', 'IPv6 unique-local'],
      ['fd00:ec2::254', 'the IPv6 cloud metadata address (unique-local)'],
      ['ff02::1', 'IPv6 multicast'],
      ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
      ['::ffff:7f00:1', 'IPv4-mapped loopback in hex'],
      ['::7f00:1', 'IPv4-compatible (deprecated) loopback'],
      ['64:ff9b::7f00:1', 'NAT64 prefix around loopback'],
      ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped loopback written out'],
      ['::ffff:10.1.2.3', 'IPv4-mapped private'],
      ['::ffff:192.168.0.1', 'IPv4-mapped private 192.168/16'],
      ['::ffff:169.254.169.254', 'IPv4-mapped metadata address'],
    ])('refuses %s (%s)', (address) => {
      expect(isForbiddenAddress(address)).toBe(true);
    });

    it.each([
      ['8.8.8.8', 'public IPv4'],
      ['1.1.1.1', 'public IPv4'],
      ['172.32.0.1', 'just outside 172.16/12'],
      ['192.169.0.1', 'just outside 192.168/16'],
      ['2606:4700:4700::1111', 'public IPv6'],
      ['::ffff:8.8.8.8', 'IPv4-mapped public address'],
    ])('allows %s (%s)', (address) => {
      expect(isForbiddenAddress(address)).toBe(false);
    });
  });

  describe('assertDeliverableUrl without the private-address override', () => {
    it('accepts an https URL to a public address and returns it parsed', async () => {
      const url = await assertDeliverableUrl('https://8.8.8.8/hooks/loyalty?x=1', false);
      expect(url).toBeInstanceOf(URL);
      expect(url.href).toBe('https://8.8.8.8/hooks/loyalty?x=1');
    });

    it('accepts an https URL to a public IPv6 address', async () => {
      expect((await assertDeliverableUrl('https://[2606:4700:4700::1111]/hooks', false)).hostname).toBe('[2606:4700:4700::1111]');
    });

    it.each([
      'https://127.0.0.1/hooks',
      'https://127.0.0.1:8443/hooks',
      'https://localhost/hooks',
      'https://localhost:3000/hooks',
      'https://10.0.0.5/hooks',
      'https://192.168.1.1/hooks',
      'https://172.20.0.1/hooks',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://[::ffff:a9fe:a9fe]/hooks',
      'https://[fd00:ec2::254]/hooks',
      'https://0.0.0.0/hooks',
      'https://[::]/hooks',
      // Other spellings of 127.0.0.1 that URL parsers normalise to it.
      'https://2130706433/hooks',
      'https://0x7f.1/hooks',
      'https://0177.0.0.1/hooks',
    ])('refuses %s', async (url) => {
      await refusal(url, false);
    });

    it('refuses plain http, even to a public address', async () => {
      const error = await refusal('http://8.8.8.8/hooks', false);
      expect((error.extras.details as Array<{ message: string }>)[0]!.message).toMatch(/https/);
    });

    it.each(['ftp://8.8.8.8/hooks', 'file:///etc/passwd', 'javascript:alert(1)'])('refuses the non-https scheme of %s', async (url) => {
      await refusal(url, false);
    });

    it.each(['not a url', '/relative/path', '', 'https://'])('refuses %j, which is not an absolute URL', async (url) => {
      await refusal(url, false);
    });

    it('refuses a URL carrying credentials', async () => {
      await refusal('https://user:secret@8.8.8.8/hooks', false);
    });

    it('refuses a host name that does not resolve', async () => {
      await refusal('https://no-such-host.invalid/hooks', false);
    });
  });

  describe('assertDeliverableUrl with LOYALTY_WEBHOOK_ALLOW_PRIVATE', () => {
    it.each(['http://127.0.0.1:4000/hooks', 'http://localhost:4000/hooks', 'https://10.0.0.5/hooks', 'http://[::1]:4000/hooks', 'http://192.168.1.1/x'])(
      'accepts %s',
      async (url) => {
        expect((await assertDeliverableUrl(url, true)).href).toBe(new URL(url).href);
      },
    );

    it('still refuses schemes other than http and https, credentials and non-URLs', async () => {
      await refusal('ftp://127.0.0.1/hooks', true);
      await refusal('http://user:pw@127.0.0.1/hooks', true);
      await refusal('not a url', true);
    });
  });
});
