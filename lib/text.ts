/** Text someone else chose (a webhook's or key's name, a token's name, a receiver's answer): what in it does not show as itself. */

/**
 * Characters that act on the text around them, or hide in it, rather than show: the controls
 * (`\p{Cc}`: ANSI escape sequences, carriage returns, 8-bit CSI); the format characters (`\p{Cf}`:
 * zero-width spaces and joiners, the bidirectional marks, embeddings, overrides and isolates, which
 * reorder the text after them, so that a name can read as another); the line and paragraph
 * separators; the other characters drawn as nothing (variation selectors, Hangul fillers, tags); and
 * unpaired surrogates, which JSON can carry but no text holds.
 */
const HIDDEN = String.raw`[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]`;

/**
 * Emoji keep the two of them that make them: a zero-width joiner between two (👩‍💻), a presentation
 * selector after one (❤️) or inside a keycap (1️⃣). Not after any `\p{Emoji}`, which holds the digits,
 * `#` and `*`: "start1\uFE0F" would pass for "start1".
 */
const EMOJI_JOINER = String.raw`(?<=\p{Extended_Pictographic}[\u{FE0F}\p{Emoji_Modifier}]?)\u200D(?=\p{Extended_Pictographic})`;
const EMOJI_PRESENTATION_SELECTOR = String.raw`(?<=\p{Extended_Pictographic})[\uFE0E\uFE0F]|(?<=[0-9#*])\uFE0F(?=\u20E3)`;

/**
 * Where a text is shown decides the whitespace controls it keeps: none in one line (a name, a field
 * of a terminal line); line breaks and tabs in a block printed to a terminal; in a description, also
 * carriage returns (a client's CRLF), which a page shows as a space but a terminal would act on.
 */
export type TextShape = 'line' | 'terminal block' | 'description';

const KEPT_CONTROLS: Record<TextShape, string> = { line: '', 'terminal block': '\\n\\t', description: '\\n\\r\\t' };

/** Global patterns, for replace and search (which ignore their lastIndex). */
const HIDDEN_CHARACTERS = Object.fromEntries(
  Object.entries(KEPT_CONTROLS).map(([shape, kept]) => [
    shape,
    new RegExp(`(?!${EMOJI_JOINER}|${EMOJI_PRESENTATION_SELECTOR}${kept === '' ? '' : `|[${kept}]`})${HIDDEN}`, 'gu'),
  ]),
) as Record<TextShape, RegExp>;

/** `\u200b` for a character of the Basic Multilingual Plane, `\u{e0041}` beyond it: as JavaScript writes them. */
const escaped = (character: string) => {
  const hex = character.codePointAt(0)!.toString(16);
  return hex.length > 4 ? `\\u{${hex}}` : `\\u${hex.padStart(4, '0')}`;
};

/** The text with each hidden character shown as its escape (`npm start\u200b`), so that it reads as what it holds. */
export const escapeHidden = (text: string, shape: TextShape = 'line'): string => text.replace(HIDDEN_CHARACTERS[shape], escaped);

export const stripHidden = (text: string): string => text.replace(HIDDEN_CHARACTERS.line, '');

export interface HiddenCharacter {
  codePoint: number;
  /** Counted in characters (code points) from 1, as a person counts them. */
  position: number;
}

export function firstHiddenCharacter(text: string, shape: TextShape = 'line'): HiddenCharacter | undefined {
  const index = text.search(HIDDEN_CHARACTERS[shape]);
  if (index < 0) return undefined;
  return { codePoint: text.codePointAt(index)!, position: Array.from(text.slice(0, index)).length + 1 };
}
