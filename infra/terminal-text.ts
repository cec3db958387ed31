import { unprintable, unprintableBesidesLineBreaksAndTabs } from '../lib/text';

const escaped = (character: string) => `\\u${character.codePointAt(0)!.toString(16).padStart(4, '0')}`;

/**
 * Text someone else sent (a header, a body, an error about them), safe to print: each character that
 * would act on the terminal is shown as its `\uXXXX` escape. Line breaks and tabs are kept when the
 * text is printed as a block of its own (a body); a one-line field escapes them too, so that it cannot
 * forge a line of our own.
 */
export function terminalSafe(text: string, { keepLineBreaks = false } = {}): string {
  return text.replace(keepLineBreaks ? unprintableBesidesLineBreaksAndTabs : unprintable, escaped);
}
