"""Token-by-token generation with a decoder exported with a KV cache, as `tessera generate` does.

    sess = tessera.InferenceSession("decoder.onnx", threads=2)
    ids = tessera.generate(sess, prompt=[1, 2, 3], max_new_tokens=32)            # greedy
    ids = tessera.generate(sess, [1, 2, 3], 32, top_k=40, temperature=0.8, seed=1)

The decoder's interface is what generation tools export: an i64 input ``input_ids`` [1, sequence],
per layer a past key and value [1, heads, past, head size] (float inputs of rank 4, in order),
optionally ``attention_mask`` [1, past + sequence] and ``position_ids`` [1, sequence]; the first
output is the logits [1, sequence, vocabulary], the others the presents, one per past input in the
same order. The presents are fed back as the next past as they came out (no copy); the session
keeps the growing past dimension symbolic after a few sizes (SessionOptions::sizes_before_dynamic,
4), so it does not compile per token.
"""

import numpy as np


def _layout(session):
    ids = mask = positions = None
    past = []
    for a in session.get_inputs():
        rank = len(a.shape)
        if a.name == "input_ids" or (ids is None and a.dtype == "i64" and rank == 2
                                     and "mask" not in a.name and "position" not in a.name):
            ids = a
        elif "mask" in a.name and a.dtype == "i64":
            mask = a
        elif "position" in a.name and a.dtype == "i64":
            positions = a
        elif a.dtype in ("f32", "f16", "f64", "bf16") and rank == 4:
            if not isinstance(a.shape[1], int) or not isinstance(a.shape[3], int):
                raise ValueError(f"past input '{a.name}' {a.shape} must have known heads and head size")
            past.append(a)
        else:
            raise ValueError(f"input '{a.name}' {a.dtype}{a.shape} is neither the tokens, an attention mask, "
                             f"position ids nor a past key or value")
    if ids is None:
        raise ValueError("no token input (i64 [1, sequence], named input_ids): not a decoder")
    if not past:
        raise ValueError("no past key/value inputs (float [1, heads, past, head size]): not a decoder with a KV cache")
    if len(session.get_outputs()) != len(past) + 1:
        raise ValueError(f"expected the logits and {len(past)} presents, found {len(session.get_outputs())} outputs")
    return ids, mask, positions, past


def generate(session, prompt, max_new_tokens=32, top_k=1, temperature=1.0, seed=0):
    """Returns the list of `max_new_tokens` new token ids after `prompt` (a sequence of ints):
    greedy with top_k=1, else sampled among the top_k most likely at `temperature` (seeded)."""
    ids, mask, positions, past_args = _layout(session)
    prompt = [int(t) for t in prompt]
    if not prompt:
        raise ValueError("the prompt is empty")
    if max_new_tokens < 1 or top_k < 1 or not temperature > 0:
        raise ValueError("max_new_tokens and top_k must be >= 1 and temperature > 0")
    rng = np.random.default_rng(seed)
    past = [np.zeros((1, a.shape[1], 0, a.shape[3]), np.float32) for a in past_args]
    feed_ids, out_ids = prompt, []
    for _ in range(max_new_tokens):
        p, s = past[0].shape[2], len(feed_ids)
        feeds = {ids.name: np.asarray([feed_ids], np.int64)}
        if mask is not None:
            feeds[mask.name] = np.ones((1, p + s), np.int64)
        if positions is not None:
            feeds[positions.name] = np.arange(p, p + s, dtype=np.int64)[None, :]
        for a, t in zip(past_args, past):
            feeds[a.name] = t
        outs = session.run(None, feeds)
        logits, past = outs[0], list(outs[1:])
        row = np.asarray(logits[0, -1], np.float64)
        if top_k == 1:
            nxt = int(np.argmax(row))
        else:
            k = min(top_k, row.size)
            top = np.argsort(-row, kind="stable")[:k]
            w = np.exp((row[top] - row[top[0]]) / temperature)
            nxt = int(top[rng.choice(k, p=w / w.sum())])
        out_ids.append(nxt)
        feed_ids = [nxt]
    return out_ids
