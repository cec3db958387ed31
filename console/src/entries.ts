/** An address as the API takes it: 0x and 40 hexadecimal digits, in either case. */
export const ADDRESS_PATTERN = /^0x[0-9a-fA-F]{40}$/;

/**
 * The entries of a pasted list or a text/CSV file: split on line ends, spaces, commas and semicolons,
 * a CSV cell's quotes dropped. Used for the addresses and event signatures the forms take.
 */
export function splitEntries(text: string): string[] {
  return text
    .split(/[\s,;]+/)
    .map((raw) => raw.replace(/^["']|["']$/g, ''))
    .filter(Boolean);
}
