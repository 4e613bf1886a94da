"""Finds where sinter and onnxruntime part ways on one ONNX case (a diagnosis aid, not part of the build).

    .cache/venv-onnx/bin/pip install onnxruntime          # for diagnosis only; not a project dependency
    .cache/venv-onnx/bin/python scripts/conformance_diff.py CASE_DIR OUT_DIR
    build-x/sinter run OUT_DIR/model.onnx --inputs OUT_DIR/test_data_set_0 --expected OUT_DIR/test_data_set_0 \
        --rtol 1e-6 --atol 0

Writes OUT_DIR/model.onnx: the case's model with every node output (whose type shape inference knows) added as
a graph output, in node order after the model's own outputs, and OUT_DIR/test_data_set_0 with the case's inputs
and onnxruntime's values of all those outputs. `sinter run --expected` then compares each one; the first output
that differs is the first node where the two diverge. The script also prints, per 4-d output, whether all its
channels are bitwise equal in onnxruntime's run (models whose weights are constant have such ties, and a
softmax over tied huge logits amplifies any rounding that breaks them).
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper, shape_inference


def main(case_dir: str, out_dir: str) -> None:
    import onnxruntime as ort

    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    inferred = shape_inference.infer_shapes(model)
    known = {v.name: v for v in inferred.graph.value_info}
    existing = {o.name for o in model.graph.output}
    added = []
    for node in model.graph.node:
        for name in node.output:
            if name and name in known and name not in existing:
                model.graph.output.append(known[name])
                added.append((name, node.op_type))
    data = os.path.join(out_dir, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(out_dir, "model.onnx"))

    src = os.path.join(case_dir, "test_data_set_0")
    session = ort.InferenceSession(os.path.join(out_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {}
    for k, inp in enumerate(session.get_inputs()):
        t = onnx.load_tensor(os.path.join(src, f"input_{k}.pb"))
        onnx.save_tensor(t, os.path.join(data, f"input_{k}.pb"))
        feeds[inp.name] = numpy_helper.to_array(t)
    outs = session.run(None, feeds)
    for k, value in enumerate(outs):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(value)), os.path.join(data, f"output_{k}.pb"))

    first = len(outs) - len(added)
    for k, (name, op) in enumerate(added):
        value = np.asarray(outs[first + k])
        note = ""
        if value.ndim == 4 and value.shape[0] == 1 and value.shape[1] > 1:
            rows = value.reshape(value.shape[1], -1)
            note = "channels bitwise equal" if np.all(rows == rows[0:1]) else ""
        print(f"output_{first + k}.pb  {name} ({op}) {value.dtype}{list(value.shape)} {note}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
