/**
 * Test support: a small XML well-formedness check (balanced tags, quoted
 * attributes, known entities), enough for the SVG this project writes.
 */
export function xmlProblems(text: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  const re = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<\?[\s\S]*?\?>|<!DOCTYPE[^>]*>/g;
  let last = 0;
  let m: RegExpExecArray | null;
  const checkText = (t: string): void => {
    if (/<|&(?!(amp|lt|gt|quot|#39|#x?[0-9a-fA-F]+);)/.test(t)) problems.push(`bad character data near ${JSON.stringify(t.slice(0, 40))}`);
  };
  while ((m = re.exec(text)) !== null) {
    checkText(text.slice(last, m.index));
    last = re.lastIndex;
    if (m[2] === undefined) continue;
    const [, close, name, , self] = m;
    if (close === '/') {
      const top = stack.pop();
      if (top !== name) problems.push(`</${name}> closes <${top ?? 'nothing'}>`);
    } else if (self !== '/') stack.push(name!);
  }
  checkText(text.slice(last));
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(' > ')}`);
  return problems;
}
