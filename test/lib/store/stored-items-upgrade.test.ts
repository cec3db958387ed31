// A stage upgraded in place keeps its table: the items every earlier layout wrote (a fixture per
// layout, test/fixtures/stored-items) are loaded as they were stored and read by the current code,
// which must answer as the code of their day did. docs/deploy-aws.md#upgrading-a-stage.
import { readFixtures, resetTableTo, type StoredItemsFixture } from '../../fixtures/stored-items/fixture-items';
import { ITEM_KINDS, keyBuilderNames, kindsIn, kindsMissingFrom, NOT_ITEM_KINDS, REGENERATE } from '../../fixtures/stored-items/item-kinds';
import { answerOf, READS } from '../../fixtures/stored-items/reads';
import { useEmbeddedStore } from '../../support/embedded-store';

const fixtures = readFixtures();
const newest = fixtures.at(-1)!;
// The fixtures' settings are those of the generator, the same for every layout: one store, one configuration.
useEmbeddedStore(newest.env);

const nextFixture = `test/fixtures/stored-items/v${fixtures.length + 1}.json`;

describe('the stored-items fixtures', () => {
  test('are made with the same settings', () => {
    for (const fixture of fixtures) expect({ layout: fixture.layout, env: fixture.env }).toEqual({ layout: fixture.layout, env: newest.env });
  });

  test("today's layout (the newest fixture) holds a key of every kind table.ts builds, and none of another kind", () => {
    const { unknown } = kindsIn(newest.items);
    const missing = kindsMissingFrom(newest.items);
    if (unknown.length > 0 || missing.length > 0) {
      throw new Error(
        `${newest.layout}.json does not match test/fixtures/stored-items/item-kinds.ts.` +
          (unknown.length > 0 ? ` Keys of no listed kind: ${unknown.join('; ')}.` : '') +
          (missing.length > 0 ? ` No item of the kinds: ${missing.join(', ')}.` : '') +
          ` A new kind of item: list it there, make the generator write it, and record today's layout as a new fixture beside the others (${REGENERATE} ${nextFixture}); keep the older ones.`,
      );
    }
  });

  test('every key builder table.ts exports is an item kind, or said not to be one', () => {
    const listed = new Set<string>([...ITEM_KINDS.flatMap((kind) => kind.uses), ...Object.keys(NOT_ITEM_KINDS)]);
    const unlisted = keyBuilderNames().filter((name) => !listed.has(name));
    if (unlisted.length > 0) {
      throw new Error(
        `lib/store/table.ts exports ${unlisted.join(', ')}, which no kind in test/fixtures/stored-items/item-kinds.ts uses: list the kind of item it keys (or why it keys none), and if items of it are written, regenerate the fixture (${REGENERATE} ${nextFixture}).`,
      );
    }
  });
});

describe.each(fixtures.map((fixture): [string, StoredItemsFixture] => [fixture.layout, fixture]))('the items of layout %s, read by the current code', (layout, fixture) => {
  // A read that writes leaves the table changed: the items are loaded again, as stored, before the next read.
  let loaded = false;
  beforeAll(() => {
    loaded = false;
  });

  test('have an answer recorded for every read', () => {
    const unanswered = Object.keys(READS).filter((name) => !(name in fixture.expected));
    if (unanswered.length > 0) {
      throw new Error(`${layout}.json has no answer to the reads ${unanswered.join(', ')}: record them (${REGENERATE} --answers test/fixtures/stored-items/${layout}.json) and read the diff`);
    }
  });

  test.each(Object.keys(READS).filter((name) => name in fixture.expected))(`%s answers as when ${layout}'s items were written`, async (name) => {
    if (!loaded) await resetTableTo(fixture.items);
    const read = READS[name]!;
    loaded = !read.mutates;
    expect(await answerOf(read, fixture.refs, fixture.items)).toEqual(fixture.expected[name]);
  });
});
