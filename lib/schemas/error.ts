import * as z from './zod';

/** Every error any operation or the gateway answers with. */
export const apiErrorBody = z.object({
  message: z.string().describe('What went wrong, naming the parameter and what is allowed where the input was at fault'),
  statusCode: z.number().int().describe('The HTTP status, repeated'),
  error: z.string().describe("The status's reason phrase, e.g. \"Bad Request\""),
});
