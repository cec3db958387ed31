/**
 * The parts of zod this project uses, re-exported one by one: `import { z } from 'zod'` keeps all
 * of zod (its locales included) in every Lambda bundle, because a bundler cannot tree-shake zod's
 * own `z` namespace object; named imports can be (about 80 KiB instead of 440 KiB minified).
 */
export { array, boolean, enum, literal, looseObject, NEVER, number, object, strictObject, string, undefined } from 'zod';
export type { infer, output, ZodType } from 'zod';
export type * as core from 'zod/v4/core';
