import { escapeHidden } from '../lib/text';

/**
 * Text someone else sent (a header, a body, an error about them), safe to print: each character that
 * would act on the terminal or hide in the line is shown as its `\uXXXX` escape. Line breaks and tabs
 * are kept when the text is printed as a block of its own (a body); a one-line field escapes them too,
 * so that it cannot forge a line of our own.
 */
export function terminalSafe(text: string, { keepLineBreaks = false } = {}): string {
  return escapeHidden(text, keepLineBreaks ? 'terminal block' : 'line');
}
