import * as z from './zod';
import { expected, name, NAME_RULE, nextPageToken, pageSize, pageToken } from './fields';

export const apiKeyPath = z.strictObject({
  keyId: z
    .string({ error: expected('must be a string') })
    .regex(/^[0-9a-fA-F]{12}$/, { error: 'must be a key id: 12 hexadecimal digits, as GET /v1/apiKeys lists them' })
    .transform((id) => id.toLowerCase()),
});

export const listApiKeysQuery = z.strictObject({ pageToken, pageSize });
export type ListApiKeysQuery = z.infer<typeof listApiKeysQuery>;

const keyName = name.describe(`A label for the key (what or who uses it), shown in listings, never needed to use the key. ${NAME_RULE}`);

/** A JSON object, or no body: only `name` is read. */
export const createApiKeyBody = z.object({ name: keyName.optional() }).optional();
export type CreateApiKeyBody = NonNullable<z.infer<typeof createApiKeyBody>>;

/** An API key as the account's listing shows it: never the key itself. Times are milliseconds since the epoch. */
export const apiKey = z.object({
  keyId: z.string().describe('The first 12 hex digits of the key\'s SHA-256: names the key without revealing it'),
  name: keyName.optional(),
  createdAt: z.number().int(),
  lastUsedAt: z.number().int().optional().describe('When the key last authorized a call, to within an hour; absent if it never has'),
  revokedAt: z.number().int().optional().describe('When revoked: the key no longer authorizes calls (within the authorizer cache\'s 60 seconds)'),
  current: z.boolean().describe('Whether this is the key that made this call'),
  createdBy: z
    .string()
    .optional()
    .describe(
      "The id of the key that made this one through the API: revoking that key revokes this one, and it may revoke this one. Absent for keys made by the operator's keys CLI (and keys made before makers were recorded)",
    ),
});
export type ApiKey = z.infer<typeof apiKey>;

export const apiKeyList = z.object({
  apiKeys: z.array(apiKey).describe('Newest first'),
  nextPageToken,
});
export type ApiKeyList = z.infer<typeof apiKeyList>;

export const createdApiKey = apiKey.extend({
  key: z.string().describe('The key, shown this once: only its SHA-256 is kept'),
});
export type CreatedApiKey = z.infer<typeof createdApiKey>;
