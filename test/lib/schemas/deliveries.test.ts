import { recoverBody } from '../../../lib/schemas/deliveries';

/** Each issue's message, for asserting what a refusal says. */
function messagesOf(input: unknown): string[] {
  const result = recoverBody.safeParse(input);
  if (result.success) throw new Error(`accepted: ${JSON.stringify(input)}`);
  return result.error.issues.map((issue) => issue.message);
}

describe('recoverBody', () => {
  it.each([0, 1e12, 1795619000000])('accepts since %p (milliseconds; 0 for all)', (since) => {
    expect(recoverBody.parse({ since })).toEqual({ since });
  });

  it.each([1795619000, 1, 1e12 - 1])('refuses since %p, which looks like seconds, saying the unit', (since) => {
    expect(messagesOf({ since })).toEqual([`milliseconds since the epoch expected; ${since} looks like seconds (multiply by 1000), or send 0 for all`]);
  });

  it.each([-1, 1.5, 'yesterday'])('refuses since %p with one message', (since) => {
    expect(messagesOf({ since })).toEqual(['must be a time in milliseconds since the epoch']);
  });
});
