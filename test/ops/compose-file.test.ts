import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * docker-compose.yml and the Dockerfile, checked without a Docker engine (there is none here, so
 * nothing claims they ran): they parse, every image is pinned to a version, and the environment
 * the services get is what the README documents.
 */
const read = (name: string) => readFileSync(new URL(`../../${name}`, import.meta.url), 'utf8');
const PINNED = /^[\w./-]+:\d+(\.\d+)+(-[\w.]+)?$/;

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, unknown>;
  healthcheck?: { test?: unknown; disable?: boolean };
}

describe('the deployment files', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, Service> };
  const readme = read('README.md');

  it('parses as YAML, every service built here or from an image pinned to a version', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'kurrentdb', 'postgres', 'worker']);
    for (const [name, service] of Object.entries(compose.services)) {
      if (service.build !== undefined) continue;
      expect(service.image, name).toMatch(PINNED);
    }
  });

  it('builds from base images pinned to a version, with a health check and a data directory the non-root user owns', () => {
    const dockerfile = read('Dockerfile');
    const bases = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]!);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(PINNED);
    expect(dockerfile).toMatch(/^HEALTHCHECK /m);
    expect(dockerfile).toMatch(/chown node:node \/app\/data/);
    expect(dockerfile).toMatch(/^USER node$/m);
  });

  it('health-checks every service: its own check, or (built here) the image’s /healthz, which the workers answer too', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      expect(service.healthcheck?.disable, name).not.toBe(true);
      if (service.build === undefined) expect(service.healthcheck?.test, name).toBeDefined();
    }
    expect(read('Dockerfile')).toMatch(/^HEALTHCHECK .*\/healthz/ms);
  });

  it('gives the service only variables the README documents', () => {
    for (const name of ['api', 'worker']) {
      for (const variable of Object.keys(compose.services[name]!.environment ?? {})) {
        expect(readme, `${name}: ${variable}`).toContain(`| \`${variable}\` |`);
      }
    }
  });
});
