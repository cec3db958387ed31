import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from '../../../lib/errors';
import { jsonBody, MAX_REQUEST_BODY_BYTES, queryParameters, validated } from '../../../lib/http/request-input';
import { createWebhookBody, listWebhooksQuery, updateWebhookBody, webhookPath } from '../../../lib/schemas/webhook';
import { apiEvent, randomAddress, randomEventSignature, webhookInput } from '../../support/factories';

/** The error the call threw; fails the test when it returned. */
function thrownBy(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, but the call returned');
}

function badRequestMessage(call: () => unknown): string {
  const error = thrownBy(call);
  expect(error).toBeInstanceOf(BadRequest);
  expect(error).toMatchObject({ statusCode: 400 });
  return (error as BadRequest).message;
}

/** An event whose raw body is exactly the given text. */
const eventWithBody = (body: string | null, isBase64Encoded = false) => ({ ...apiEvent({}), body, isBase64Encoded });
const withContentType = (contentType: string, body: string | null) => ({ ...eventWithBody(body), headers: { 'Content-Type': contentType } });

describe('queryParameters', () => {
  it('returns each parameter as one string', () => {
    expect(queryParameters(apiEvent({ query: { pageSize: '5', status: 'active' } }))).toEqual({ pageSize: '5', status: 'active' });
  });

  it('treats a parameter with an empty value as absent', () => {
    expect(queryParameters(apiEvent({ query: { pageSize: '', status: 'active' } }))).toEqual({ status: 'active' });
  });

  it('refuses a parameter given twice with non-empty values with a 400 naming it', () => {
    const message = badRequestMessage(() => queryParameters(apiEvent({ query: { status: ['active', 'inactive'] } })));
    expect(message).toContain('status');
  });

  it('refuses a parameter given twice with the same value with a 400', () => {
    const message = badRequestMessage(() => queryParameters(apiEvent({ query: { pageSize: ['5', '5'] } })));
    expect(message).toContain('pageSize');
  });

  it('accepts a parameter given twice when only one value is non-empty', () => {
    expect(queryParameters(apiEvent({ query: { status: ['', 'inactive'] } }))).toEqual({ status: 'inactive' });
  });

  it('falls back to queryStringParameters when multiValueQueryStringParameters is null', () => {
    const event = { ...apiEvent({}), queryStringParameters: { pageSize: '7', status: '' }, multiValueQueryStringParameters: null };
    expect(queryParameters(event)).toEqual({ pageSize: '7' });
  });

  it('returns no parameters when the event has none', () => {
    expect(queryParameters(apiEvent({}))).toEqual({});
  });
});

describe('jsonBody', () => {
  it('reads a missing body as {}', () => {
    expect(jsonBody(eventWithBody(null))).toEqual({});
  });

  it('reads an empty body as {}', () => {
    expect(jsonBody(eventWithBody(''))).toEqual({});
  });

  it('parses a JSON object body', () => {
    const input = webhookInput();
    expect(jsonBody(apiEvent({ body: input }))).toEqual(input);
  });

  it('decodes a base64-encoded body before parsing it', () => {
    const input = webhookInput({ name: 'caf\u00e9' });
    const encoded = Buffer.from(JSON.stringify(input), 'utf8').toString('base64');
    expect(jsonBody(eventWithBody(encoded, true))).toEqual(input);
  });

  it('accepts a leading UTF-8 byte order mark', () => {
    expect(jsonBody(eventWithBody('\ufeff{"name":"bom"}'))).toEqual({ name: 'bom' });
    const encoded = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"bom"}')]).toString('base64');
    expect(jsonBody(eventWithBody(encoded, true))).toEqual({ name: 'bom' });
  });

  it.each([
    'application/json',
    'Application/JSON',
    'application/json; charset=utf-8',
    'application/json;charset="UTF-8"',
    'application/merge-patch+json',
    'application/vnd.example.webhook+json; version=2',
  ])('parses a body sent as %s', (contentType) => {
    expect(jsonBody(withContentType(contentType, '{"a":1}'))).toEqual({ a: 1 });
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonp', 'application/json; charset=latin1', 'json'])(
    'refuses a body sent as %s with 415, naming the content type',
    (contentType) => {
      const error = thrownBy(() => jsonBody(withContentType(contentType, '{"a":1}')));
      expect(error).toBeInstanceOf(UnsupportedMediaType);
      expect((error as UnsupportedMediaType).statusCode).toBe(415);
      expect((error as Error).message).toContain(contentType);
    },
  );

  it('finds the content type whatever the case of the header name', () => {
    expect(thrownBy(() => jsonBody({ ...eventWithBody('{}'), headers: { 'CONTENT-TYPE': 'text/plain' } }))).toBeInstanceOf(UnsupportedMediaType);
  });

  it('ignores the content type when there is no body', () => {
    expect(jsonBody(withContentType('text/plain', null))).toEqual({});
  });

  it.each(['{"url": ', '{url: 1}', "{'a': 1}", 'undefined'])('refuses malformed JSON %p with 400', (body) => {
    expect(badRequestMessage(() => jsonBody(eventWithBody(body)))).toBe('Request body is not valid JSON');
  });

  it.each(['[]', '[{"url":"https://a.example"}]', 'null', '42', '"text"', 'true'])(
    'refuses the JSON value %s, which is not an object, with 400',
    (body) => {
      expect(badRequestMessage(() => jsonBody(eventWithBody(body)))).toBe('Request body must be a JSON object');
    },
  );

  it('accepts a body of exactly the byte limit', () => {
    const padding = MAX_REQUEST_BODY_BYTES - JSON.stringify({ name: '' }).length;
    const body = JSON.stringify({ name: 'x'.repeat(padding) });
    expect(Buffer.byteLength(body)).toBe(MAX_REQUEST_BODY_BYTES);
    expect(jsonBody(eventWithBody(body))).toEqual({ name: 'x'.repeat(padding) });
  });

  it('refuses a body one byte over 1 MiB with 413 PayloadTooLarge', () => {
    const padding = MAX_REQUEST_BODY_BYTES + 1 - JSON.stringify({ name: '' }).length;
    const body = JSON.stringify({ name: 'x'.repeat(padding) });
    expect(MAX_REQUEST_BODY_BYTES).toBe(1024 * 1024);
    const error = thrownBy(() => jsonBody(eventWithBody(body)));
    expect(error).toBeInstanceOf(PayloadTooLarge);
    expect(error).toMatchObject({ statusCode: 413 });
  });

  it('counts the limit in UTF-8 bytes, not characters', () => {
    // Under the limit in characters, over it in bytes: each '\u00e9' is two bytes.
    const body = JSON.stringify({ name: '\u00e9'.repeat(MAX_REQUEST_BODY_BYTES / 2 + 1) });
    expect(body.length).toBeLessThan(MAX_REQUEST_BODY_BYTES);
    expect(thrownBy(() => jsonBody(eventWithBody(body)))).toBeInstanceOf(PayloadTooLarge);
  });
});

describe('validated', () => {
  it('returns the parsed input, with defaults applied', () => {
    expect(validated(listWebhooksQuery, {}, 'query parameter')).toEqual({ pageSize: 10 });
  });

  it('names an array element by its path, like metadata.addresses[0]', () => {
    const input = webhookInput({ metadata: { addresses: ['0x1234'] } });
    const message = badRequestMessage(() => validated(createWebhookBody, input, 'body field'));
    expect(message).toBe('Invalid body field metadata.addresses[0]: must be 0x followed by 40 hexadecimal digits');
  });

  it('names the element at its own index when a later element is wrong', () => {
    const input = webhookInput({ metadata: { addresses: [randomAddress(), randomAddress(), 'nope'] } });
    expect(badRequestMessage(() => validated(createWebhookBody, input, 'body field'))).toContain('metadata.addresses[2]');
  });

  it('says a required field is required', () => {
    const { url: _url, ...input } = webhookInput();
    expect(badRequestMessage(() => validated(createWebhookBody, input, 'body field'))).toBe('Invalid body field url: is required');
  });

  it('names every invalid field, separated by semicolons', () => {
    const input = webhookInput({ chainId: 'zero', includeLogs: 'yes' });
    const message = badRequestMessage(() => validated(createWebhookBody, input, 'body field'));
    expect(message.split('; ')).toEqual([
      expect.stringMatching(/^Invalid body field chainId: /),
      'Invalid body field includeLogs: must be true or false',
    ]);
  });

  it('lists the allowed keys for an unknown body field', () => {
    const message = badRequestMessage(() => validated(createWebhookBody, webhookInput({ colour: 'red' }), 'body field'));
    expect(message).toBe(
      'Unknown body field colour; allowed: url, chainId, eventType, metadata, name, description, includeInternalTxs, includeLogs',
    );
  });

  it('lists the allowed keys of a nested object for an unknown nested field', () => {
    const input = webhookInput({ metadata: { addresses: [randomAddress()], topics: [] } });
    expect(badRequestMessage(() => validated(createWebhookBody, input, 'body field'))).toBe(
      'Unknown body field metadata.topics; allowed: addresses, eventSignatures',
    );
  });

  it('lists the allowed keys of an optional nested object for an unknown nested field', () => {
    const input = { metadata: { eventSignatures: [randomEventSignature()], topics: [] } };
    expect(badRequestMessage(() => validated(updateWebhookBody, input, 'body field'))).toBe(
      'Unknown body field metadata.topics; allowed: eventSignatures',
    );
  });

  it('names unknown query parameters in the plural and lists the allowed ones', () => {
    const message = badRequestMessage(() => validated(listWebhooksQuery, { limit: '5', offset: '10' }, 'query parameter'));
    expect(message).toBe('Unknown query parameters limit, offset; allowed: pageToken, pageSize, status');
  });

  it('names an invalid path parameter', () => {
    const message = badRequestMessage(() => validated(webhookPath, { id: 'not-a-uuid' }, 'path parameter'));
    expect(message).toBe('Invalid path parameter id: must be a webhook id (a UUID)');
  });

  it('describes a whole-body rule without a field name', () => {
    const message = badRequestMessage(() => validated(updateWebhookBody, {}, 'body field'));
    expect(message).toMatch(/^Invalid request body: must set at least one of /);
  });
});
