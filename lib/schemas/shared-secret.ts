import * as z from './zod';
import { queryFlag } from './fields';

/** Any JSON object, or no body at all, is accepted and ignored. */
export const rotateSharedSecretBody = z.looseObject({});

/** An option of ours in the query: the hosted API's rotate takes no body, and ours ignores one. */
export const rotateSharedSecretQuery = z.strictObject({
  endGracePeriod: queryFlag.describe(
    'true: the previous secret stops signing at once (notifications carry only the new signature); false (the default): it signs beside the new one for the grace period',
  ),
});
export type RotateSharedSecretQuery = z.infer<typeof rotateSharedSecretQuery>;

export const sharedSecret = z.object({
  secret: z.string().describe('64 lower-case hex characters: receivers hex-decode it to get the 32-byte HMAC key'),
});
export type SharedSecret = z.infer<typeof sharedSecret>;
