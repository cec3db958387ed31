import * as z from './zod';

/** Any JSON object, or no body at all, is accepted and ignored. */
export const rotateSharedSecretBody = z.looseObject({});

export const sharedSecret = z.object({
  secret: z.string().describe('64 lower-case hex characters: receivers hex-decode it to get the 32-byte HMAC key'),
});
export type SharedSecret = z.infer<typeof sharedSecret>;
