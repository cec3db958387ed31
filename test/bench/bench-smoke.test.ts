import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { runScript } from '../support/processes';
import { useTempDir } from '../support/temp-dir';

/** Only that the runner starts, measures and reports: no figure is judged here (that is `npm run bench`). */
describe('npm run bench', () => {
  const dirPath = useTempDir('bench-smoke-');

  it('runs --quick on a small section, prints its table and writes the figures as JSON', async () => {
    const out = path.join(dirPath(), 'results.json');
    const { code, stdout, stderr } = await runScript('bench/run.ts', ['--quick', '--only=list', `--out=${out}`], {}, ['--expose-gc']);
    expect({ code, stderr: code === 0 ? '' : stderr }).toEqual({ code: 0, stderr: '' });
    expect(stderr).toMatch(/\[\s*\d+s\] list cost: seeding/);
    expect(stdout).toMatch(/^\| section +\| figure +\| value +\| target/m);
    expect(stdout).toMatch(/\| 1 list cost +\| items read\/page, 1000 webhooks, status=inactive \(1%\), pageSize 10 /);
    const results = JSON.parse(await readFile(out, 'utf8'));
    expect(results).toMatchObject({ mode: 'quick', figures: expect.any(Array) });
    expect(results.figures.length).toBeGreaterThan(10);
    for (const item of results.figures) expect(item).toEqual(expect.objectContaining({ section: expect.any(String), name: expect.any(String), value: expect.any(Number) }));
  }, 120_000);
});
