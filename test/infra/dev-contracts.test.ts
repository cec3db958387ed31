import { readFileSync } from 'node:fs';
import { compiledContracts, GENERATED } from '../../infra/compile-contracts';

test('the checked-in contract artifacts are what their Solidity sources compile to (npm run compile-contracts)', () => {
  expect(readFileSync(GENERATED, 'utf8')).toBe(compiledContracts());
}, 60_000);
