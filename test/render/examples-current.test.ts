/**
 * docs/images/ must hold exactly what test/support/make-analysis-examples.ts
 * makes. Regenerate with
 *
 *   UPDATE_EXAMPLES=1 npx jest test/render/examples-current
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeAnalysisExamples } from '../support/make-analysis-examples';
import { xmlProblems } from './well-formed';

const DIR = path.resolve(__dirname, '..', '..', 'docs', 'images');
const examples = makeAnalysisExamples();

describe('docs/images is current', () => {
  if (process.env['UPDATE_EXAMPLES'] === '1') {
    test('writes docs/images (UPDATE_EXAMPLES=1)', () => {
      fs.mkdirSync(DIR, { recursive: true });
      for (const [name, text] of examples) fs.writeFileSync(path.join(DIR, name), text);
    });
  }
  test.each([...examples.keys()])('%s equals a fresh run and is well-formed', (name) => {
    const file = path.join(DIR, name);
    if (!fs.existsSync(file)) throw new Error(`docs/images/${name} is missing; run UPDATE_EXAMPLES=1 npx jest test/render/examples-current`);
    const fresh = examples.get(name)!;
    expect(xmlProblems(fresh)).toEqual([]);
    if (fs.readFileSync(file, 'utf8') !== fresh) throw new Error(`docs/images/${name} is stale; run UPDATE_EXAMPLES=1 npx jest test/render/examples-current`);
  });
});
