"""Lays out ONNX's backend test data for sinter's conformance runner (called by conformance_data.sh).

node, pytorch-converted, pytorch-operator and simple already hold model.onnx + test_data_set_*/ per case in the
package: they are linked. light holds bare models and expected outputs: each becomes a case folder with the
input the onnx runner generates for them (arange(n) / n, float32, unknown dims as 1) and the expected output.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main(out_dir: str, version: str) -> None:
    import onnx.backend.test as bt

    src = os.path.join(os.path.dirname(bt.__file__), "data")
    stamp = os.path.join(out_dir, ".version")
    if os.path.exists(stamp) and open(stamp).read() == version:
        return
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    for suite in ("node", "pytorch-converted", "pytorch-operator", "simple"):
        os.symlink(os.path.join(src, suite), os.path.join(out_dir, suite))
    light_src = os.path.join(src, "light")
    light = os.path.join(out_dir, "light")
    os.makedirs(light)
    for f in sorted(os.listdir(light_src)):
        if not f.endswith(".onnx"):
            continue
        name = f[: -len(".onnx")]
        case = os.path.join(light, "test_" + name[len("light_"):])
        data = os.path.join(case, "test_data_set_0")
        os.makedirs(data)
        shutil.copy(os.path.join(light_src, f), os.path.join(case, "model.onnx"))
        model = onnx.load(os.path.join(light_src, f))
        inits = {i.name for i in model.graph.initializer}
        k = 0
        for inp in model.graph.input:
            if inp.name in inits:
                continue
            shape = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in inp.type.tensor_type.shape.dim)
            n = int(np.prod(shape))
            value = (np.arange(n).reshape(shape) / n).astype(np.float32)
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as fh:
                fh.write(numpy_helper.from_array(value).SerializeToString())
            k += 1
        for i in range(len(model.graph.output)):
            shutil.copy(os.path.join(light_src, f"{name}_output_{i}.pb"), os.path.join(data, f"output_{i}.pb"))
    with open(stamp, "w") as fh:
        fh.write(version)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
