"""Exports the model zoo (zoo.py) to ONNX and writes the manifest `sinter bench --suite models` reads.

    python bench/models/export.py OUT_DIR [--only NAME,...]

OUT_DIR gets NAME.onnx for every zoo model (float32, symbolic batch dimension, random seeded weights), ONNX's own
light models where the installed onnx package carries them (light_NAME.onnx: their weights are made by the
graph), and models.json: for each model its file, inputs (name, dtype, shape with "batch", integer ranges) and a
line saying what it is.
"""
import argparse
import json
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402


def export_one(name, out_dir):
    factory, spec, what = zoo.ZOO[name]
    torch.manual_seed(0)
    model = factory().eval()
    args = tuple(zoo.example_inputs(spec, 2))
    names = [i["name"] for i in spec]
    path = os.path.join(out_dir, name + ".onnx")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = model(*args)
        n_out = len(outs) if isinstance(outs, tuple) else 1
        out_names = [f"output_{k}" for k in range(n_out)]
        axes = {n: {0: "batch"} for n in names + out_names}
        try:  # the TorchScript exporter: plain opset-17 graphs, as most deployed models were exported
            torch.onnx.export(model, args, path, input_names=names, output_names=out_names, dynamic_axes=axes,
                              opset_version=17, dynamo=False)
        except TypeError:  # a torch without the dynamo argument
            torch.onnx.export(model, args, path, input_names=names, output_names=out_names, dynamic_axes=axes,
                              opset_version=17)
    return {"file": name + ".onnx", "inputs": spec, "outputs": out_names, "what": what, "source": "zoo.py"}


def light_models(out_dir):
    """ONNX's light models (the model zoo's classics with their weights made by the graph), if packaged."""
    import onnx
    base = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    found = {}
    if not os.path.isdir(base):
        return found
    for f in sorted(os.listdir(base)):
        if not f.endswith(".onnx"):
            continue
        m = onnx.load(os.path.join(base, f), load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        inputs = []
        for i in m.graph.input:
            if i.name in inits:
                continue
            # The classics are exported at a fixed batch (1): they run at that batch only.
            dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
            inputs.append({"name": i.name, "dtype": "float32", "shape": dims})
        name = f[:-5]
        with open(os.path.join(base, f), "rb") as src, open(os.path.join(out_dir, f), "wb") as dst:
            dst.write(src.read())
        found[name] = {"file": f, "inputs": inputs, "outputs": [o.name for o in m.graph.output],
                       "what": "ONNX light model " + name[len("light_"):], "source": "onnx package"}
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    only = [s for s in a.only.split(",") if s]
    manifest = {}
    for name in zoo.ZOO:
        if only and name not in only:
            continue
        print(f"exporting {name} ...", flush=True)
        manifest[name] = export_one(name, a.out_dir)
    if not only:
        manifest.update(light_models(a.out_dir))
    path = os.path.join(a.out_dir, "models.json")
    old = {}
    if only and os.path.exists(path):
        with open(path) as f:
            old = json.load(f)
    old.update(manifest)
    with open(path, "w") as f:
        json.dump(old, f, indent=1)
    print(f"wrote {len(manifest)} models and {path}")


if __name__ == "__main__":
    main()
