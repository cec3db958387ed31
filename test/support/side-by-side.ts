/**
 * For tests that each run one slow, independent case (a process of its own) and assert on its
 * result: the first test to ask starts every case, `parallel` at a time, its own first, and each
 * test then waits for its own result only. The cases run side by side rather than one after
 * another, while each keeps its test; any one test still runs alone.
 */
export function sideBySide<C, R>(cases: readonly C[], run: (one: C) => Promise<R>, parallel = 2): (one: C) => Promise<R> {
  const keyOf = (one: C) => JSON.stringify(one);
  let results: Map<string, Promise<R>> | undefined;
  let running = 0;
  const waiting: (() => void)[] = [];
  const limited = async (one: C): Promise<R> => {
    if (running >= parallel) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await run(one);
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
  return (asked) => {
    results ??= new Map(
      [asked, ...cases.filter((one) => keyOf(one) !== keyOf(asked))].map((one) => {
        const result = limited(one);
        // The case of a test filtered out is never awaited: its failure must not be an unhandled rejection.
        result.catch(() => undefined);
        return [keyOf(one), result];
      }),
    );
    const result = results.get(keyOf(asked));
    if (!result) throw new Error(`not one of the cases: ${keyOf(asked)}`);
    return result;
  };
}
