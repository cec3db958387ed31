/** Text someone else chose (a token's name, a receiver's answer), made safe to show. */

/**
 * Besides the C0 and C1 controls and DEL (`\p{Cc}`: ANSI escape sequences, carriage returns, 8-bit
 * CSI), what acts on the text around it rather than shows: the Unicode line and paragraph
 * separators, and the bidirectional marks, embeddings, overrides and isolates, which reorder the
 * text after them (a name can read as another).
 */
const SEPARATORS_AND_BIDI_MARKS = '\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';

/** Every character that acts on the text around it rather than shows. */
export const unprintable = new RegExp(`[\\p{Cc}${SEPARATORS_AND_BIDI_MARKS}]`, 'gu');

/** The same but line breaks and tabs: for text shown as a block of its own. */
export const unprintableBesidesLineBreaksAndTabs = new RegExp(`[^\\P{Cc}\\n\\t]|[${SEPARATORS_AND_BIDI_MARKS}]`, 'gu');

export const stripUnprintable = (text: string): string => text.replace(unprintable, '');
