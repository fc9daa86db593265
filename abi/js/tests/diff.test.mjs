// The playground's line diff (www/diff.js), table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineEdits, unifiedDiff } from '../www/diff.js';

const show = (edits) => edits.map((e) => e.type + e.text).join('|');

const cases = [
  { name: 'equal', a: 'a\nb', b: 'a\nb', edits: ' a| b', hunks: [] },
  { name: 'insertion in the middle', a: 'a\nc', b: 'a\nb\nc', edits: ' a|+b| c', hunks: ['@@ -1,2 +1,3 @@'] },
  { name: 'deletion at the end', a: 'a\nb', b: 'a', edits: ' a|-b', hunks: ['@@ -1,2 +1,1 @@'] },
  { name: 'replacement', a: 'x\ny\nz', b: 'x\nY\nz', edits: ' x|+Y|-y| z', hunks: ['@@ -1,3 +1,3 @@'] },
  {
    name: 'far apart changes make two hunks',
    a: '1\n2\n3\n4\n5\n6\n7\n8\n9\n10',
    b: '0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11',
    edits: '+0| 1| 2| 3| 4| 5| 6| 7| 8| 9| 10|+11',
    hunks: ['@@ -1,3 +1,4 @@', '@@ -8,3 +9,4 @@'],
  },
];

for (const { name, a, b, edits, hunks } of cases) {
  test(name, () => {
    assert.equal(show(lineEdits(a.split('\n'), b.split('\n'))), edits);
    assert.deepEqual(unifiedDiff(a, b).map((h) => h.header), hunks);
  });
}
