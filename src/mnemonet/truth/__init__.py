"""The truth rules, in one pure layer: what a relation means, which statement is current, what answers.

Nothing here does I/O beyond reading its packaged vocabulary file; everything
takes plain data (``mnemonet.model``) and returns plain data, so the store's
read path, the validation worker and the offline model apply the same rules:

- ``vocabulary``: the relation vocabulary (aliases, cardinality, temporality,
  polarity, exclusivity) and the naming rule for predicates outside it;
- ``text``: the word normalisation every rule matches on;
- ``currency``: which of two statements stands (the one policy, at write and at read);
- ``answer``: composing the answer to a question from a resolved recall.
"""
