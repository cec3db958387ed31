import { escapeHidden, firstHiddenCharacter, stripHidden } from '../../lib/text';

describe('escapeHidden', () => {
  it.each([
    ['a zero-width space', 'npm start\u200b', 'npm start\\u200b'],
    ['a right-to-left override', 'invoice \u202egnp.exe', 'invoice \\u202egnp.exe'],
    ['the bidirectional isolates and marks', '\u2066a\u2069\u200e\u200f\u061c', '\\u2066a\\u2069\\u200e\\u200f\\u061c'],
    ['a byte order mark, a soft hyphen and a word joiner', '\ufeffa\u00adb\u2060', '\\ufeffa\\u00adb\\u2060'],
    ['the line and paragraph separators', 'a\u2028b\u2029', 'a\\u2028b\\u2029'],
    ['controls, line breaks and tabs among them', 'a\u0000\u001b[2J\r\n\t\u0085', 'a\\u0000\\u001b[2J\\u000d\\u000a\\u0009\\u0085'],
    ['a Hangul filler and a variation selector, drawn as nothing', 'a\u3164b\ufe0f', 'a\\u3164b\\ufe0f'],
    ['tag characters, beyond the Basic Multilingual Plane, as \\u{...}', 'a\u{e0041}', 'a\\u{e0041}'],
    ['a zero-width joiner between letters', 'a\u200db', 'a\\u200db'],
    ['a zero-width joiner after an emoji with nothing to join', '🚀\u200d', '🚀\\u200d'],
    ['an unpaired surrogate', 'a\ud800b', 'a\\ud800b'],
    ['a presentation selector after a digit or # that is no keycap (both are \\p{Emoji})', 'npm start1\ufe0f deploy#\ufe0e', 'npm start1\\ufe0f deploy#\\ufe0e'],
  ])('shows %s as escapes', (_, text, shown) => {
    expect(escapeHidden(text)).toBe(shown);
  });

  it.each([
    ['a plain name', 'treasury — déploiement 財務 "quoted"'],
    ['emoji joined by zero-width joiners', '👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🧑🏽‍💻 🏃‍♂️'],
    ['emoji with presentation selectors', '❤️ 1️⃣ ☺︎'],
    ['combining marks', 'e\u0301'],
  ])('leaves %s as it is', (_, text) => {
    expect(escapeHidden(text)).toBe(text);
  });

  it('keeps line breaks and tabs in a terminal block, and carriage returns too in a description', () => {
    expect(escapeHidden('a\r\n\tb\u200b', 'terminal block')).toBe('a\\u000d\n\tb\\u200b');
    expect(escapeHidden('a\r\n\tb\u200b\u000b', 'description')).toBe('a\r\n\tb\\u200b\\u000b');
  });
});

describe('stripHidden', () => {
  it('drops what escapeHidden escapes, and keeps emoji whole', () => {
    expect(stripHidden('\u202eTe\u200bther\u0007 👩‍💻')).toBe('Tether 👩‍💻');
  });
});

describe('firstHiddenCharacter', () => {
  it('gives the first hidden character and its position in characters from 1', () => {
    expect(firstHiddenCharacter('npm start\u200b\u202e')).toEqual({ codePoint: 0x200b, position: 10 });
    expect(firstHiddenCharacter('🏦🏦\u{e0041}')).toEqual({ codePoint: 0xe0041, position: 3 });
    expect(firstHiddenCharacter('a\ud800')).toEqual({ codePoint: 0xd800, position: 2 });
  });

  it('finds none in text that shows as itself, nor a line break in a description', () => {
    expect(firstHiddenCharacter('👩‍💻 treasury')).toBeUndefined();
    expect(firstHiddenCharacter('line one\r\nline\ttwo', 'description')).toBeUndefined();
    expect(firstHiddenCharacter('line one\nline two')).toEqual({ codePoint: 0x0a, position: 9 });
  });
});
