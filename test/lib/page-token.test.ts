import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { BadRequest } from '../../lib/errors';
import { pageTokens, type PageTokenScope } from '../../lib/page-token';

const { encode: encodePageToken, decode: decodePageToken } = pageTokens.webhooks;
import { randomAccount } from '../support/factories';

const randomKey = () => randomBytes(32);

/** A key, a scope and a token signed with them for a fresh webhook id. */
function signedToken(scope: Partial<PageTokenScope> = {}) {
  const key = randomKey();
  const fullScope: PageTokenScope = { account: randomAccount(), ...scope };
  const lastId = uuidv7();
  return { key, scope: fullScope, lastId, token: encodePageToken(key, fullScope, lastId) };
}

/** The error decode threw; fails the test when it decoded. */
function decodeError(key: Buffer, scope: PageTokenScope, token: string): unknown {
  try {
    decodePageToken(key, scope, token);
  } catch (error) {
    return error;
  }
  throw new Error(`token ${JSON.stringify(token)} was accepted`);
}

function expectInvalidToken(key: Buffer, scope: PageTokenScope, token: string): void {
  const error = decodeError(key, scope, token);
  expect(error).toBeInstanceOf(BadRequest);
  expect(error).toMatchObject({ statusCode: 400, message: expect.stringMatching(/^Invalid pageToken/) });
}

describe('page tokens', () => {
  it('decode returns the id that was encoded, for the same key and scope', () => {
    const { key, scope, lastId, token } = signedToken({ status: 'active' });
    expect(decodePageToken(key, scope, token)).toBe(lastId);
  });

  it('decode returns the id for a scope without a status filter', () => {
    const { key, scope, lastId, token } = signedToken();
    expect(decodePageToken(key, scope, token)).toBe(lastId);
  });

  it('tokens are opaque base64url strings that show neither the id nor the account', () => {
    const { scope, lastId, token } = signedToken({ status: 'inactive' });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(token).not.toContain(lastId);
    expect(token).not.toContain(lastId.replaceAll('-', ''));
    expect(token).not.toContain(scope.account);
  });

  it('two ids give two different tokens', () => {
    const key = randomKey();
    const scope = { account: randomAccount() };
    expect(encodePageToken(key, scope, uuidv7())).not.toBe(encodePageToken(key, scope, uuidv7()));
  });

  it.each([
    ['garbage text', 'not a page token!'],
    ['a JSON object', '{"lastId":"0190a000-0000-7000-8000-000000000000"}'],
    ['a bare UUID', '0190a000-0000-7000-8000-000000000000'],
    ['base64 padding only', '===='],
  ])('decode rejects %s with 400', (_label, token) => {
    const { key, scope } = signedToken();
    expectInvalidToken(key, scope, token);
  });

  it('decode rejects an empty token with 400', () => {
    const { key, scope } = signedToken();
    expectInvalidToken(key, scope, '');
  });

  it('decode rejects a token one byte short with 400', () => {
    const { key, scope, token } = signedToken();
    const bytes = Buffer.from(token, 'base64url');
    expectInvalidToken(key, scope, bytes.subarray(0, bytes.length - 1).toString('base64url'));
  });

  it('decode rejects a token one byte long with 400', () => {
    const { key, scope, token } = signedToken();
    const bytes = Buffer.from(token, 'base64url');
    expectInvalidToken(key, scope, Buffer.concat([bytes, Buffer.of(0)]).toString('base64url'));
  });

  it('decode rejects a token with any single byte altered, at every byte position', () => {
    const { key, scope, token } = signedToken({ status: 'active' });
    const bytes = Buffer.from(token, 'base64url');
    expect(bytes.length).toBeGreaterThan(0);
    for (let position = 0; position < bytes.length; position += 1) {
      for (const flip of [0x01, 0x80]) {
        const altered = Buffer.from(bytes);
        altered[position]! ^= flip;
        const alteredToken = altered.toString('base64url');
        expect(alteredToken).not.toBe(token);
        expectInvalidToken(key, scope, alteredToken);
      }
    }
  });

  it('decode rejects a token signed for another account with 400', () => {
    const { key, scope, token } = signedToken();
    expectInvalidToken(key, { ...scope, account: randomAccount() }, token);
  });

  it('decode rejects a token whose account is a prefix of the caller account with 400', () => {
    const key = randomKey();
    const token = encodePageToken(key, { account: 'acct-a' }, uuidv7());
    expectInvalidToken(key, { account: 'acct-ab' }, token);
  });

  it('decode rejects a token signed with a status filter when none is given, with 400', () => {
    const { key, scope, token } = signedToken({ status: 'active' });
    expectInvalidToken(key, { account: scope.account }, token);
  });

  it('decode rejects a token signed without a status filter when one is given, with 400', () => {
    const { key, scope, token } = signedToken();
    expectInvalidToken(key, { ...scope, status: 'active' }, token);
    expectInvalidToken(key, { ...scope, status: 'inactive' }, token);
  });

  it('decode rejects a token signed for active when inactive is given, and the reverse, with 400', () => {
    const active = signedToken({ status: 'active' });
    expectInvalidToken(active.key, { ...active.scope, status: 'inactive' }, active.token);
    const inactive = signedToken({ status: 'inactive' });
    expectInvalidToken(inactive.key, { ...inactive.scope, status: 'active' }, inactive.token);
  });

  it('decode rejects a token signed with another key with 400', () => {
    const { scope, token } = signedToken();
    expectInvalidToken(randomKey(), scope, token);
  });

  it('decode rejects a token with a character appended (non-canonical base64url) with 400', () => {
    const { key, scope, token } = signedToken();
    expect(Buffer.from(`${token}A`, 'base64url').equals(Buffer.from(token, 'base64url'))).toBe(true);
    expectInvalidToken(key, scope, `${token}A`);
  });

  it('decode rejects a token with base64 padding appended with 400', () => {
    const { key, scope, token } = signedToken();
    expectInvalidToken(key, scope, `${token}=`);
  });

  it('decode rejects a token with a line break inserted with 400', () => {
    const { key, scope, token } = signedToken();
    expectInvalidToken(key, scope, `${token.slice(0, 10)}\n${token.slice(10)}`);
  });

  it('decode rejects the standard-base64 spelling of a valid token with 400', () => {
    // Find a token whose bytes spell differently in base64 and base64url (it holds '-' or '_').
    let sample = signedToken();
    while (!/[-_]/.test(sample.token)) sample = signedToken();
    const standard = Buffer.from(sample.token, 'base64url').toString('base64');
    expect(standard).not.toBe(sample.token);
    expectInvalidToken(sample.key, sample.scope, standard);
  });
});
