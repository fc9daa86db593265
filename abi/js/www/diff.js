// A unified line diff, enough for showing what a policy changed in a pretty-printed object.
// Admission mutations are small, so the common head and tail are cut first and the quadratic
// longest-common-subsequence table only covers the changed middle.

/** Edit script of `a` into `b`: [{type: ' ' | '-' | '+', text}]. */
export function lineEdits(a, b) {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head &&
         a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  // lcs[i][j]: length of the LCS of x[i..] and y[j..].
  const lcs = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const middle = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      middle.push({ type: ' ', text: x[i++] }); j++;
    } else if (j < y.length && (i === x.length || lcs[i][j + 1] >= lcs[i + 1][j])) {
      middle.push({ type: '+', text: y[j++] });
    } else {
      middle.push({ type: '-', text: x[i++] });
    }
  }
  return [
    ...a.slice(0, head).map((text) => ({ type: ' ', text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ type: ' ', text })),
  ];
}

/**
 * Hunks of a unified diff of two texts with `context` lines around each change:
 * [{header: '@@ -l,n +l,n @@', lines: [{type, text}]}]. No hunks when the texts are equal.
 */
export function unifiedDiff(aText, bText, context = 3) {
  const edits = lineEdits(aText.split('\n'), bText.split('\n'));
  const hunks = [];
  let aLine = 1;
  let bLine = 1;
  let current = null;
  let lastChange = -Infinity;
  // nextChange[k]: index of the first change at or after k.
  const nextChange = new Array(edits.length + 1).fill(Infinity);
  for (let k = edits.length - 1; k >= 0; k--) {
    nextChange[k] = edits[k].type !== ' ' ? k : nextChange[k + 1];
  }
  edits.forEach((edit, k) => {
    const changed = edit.type !== ' ';
    const near = changed || k - lastChange <= context || nextChange[k] - k <= context;
    if (near) {
      if (!current) {
        current = { aStart: aLine, bStart: bLine, aCount: 0, bCount: 0, lines: [] };
        hunks.push(current);
      }
      current.lines.push(edit);
      if (edit.type !== '+') current.aCount++;
      if (edit.type !== '-') current.bCount++;
    } else {
      current = null;
    }
    if (changed) lastChange = k;
    if (edit.type !== '+') aLine++;
    if (edit.type !== '-') bLine++;
  });
  return hunks.map((h) => ({
    header: `@@ -${h.aStart},${h.aCount} +${h.bStart},${h.bCount} @@`,
    lines: h.lines,
  }));
}
