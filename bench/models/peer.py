"""The peers of `sinter bench --suite models`: ONNX Runtime and OpenVINO, driven over stdin/stdout so that sinter
times them and itself alternately in one run. One JSON request per line, one JSON reply per line:

  {"op": "make_inputs", "manifest": PATH, "model": NAME, "batch": B, "dir": DIR}
      writes DIR/input_K.pb for the model's inputs at batch B (seeded: the same every run), from models.json.
  {"op": "open", "engine": E, "model": PATH, "inputs": DIR, "threads": T}
      E is ort (all graph optimisations), ov-f32 (OpenVINO, float32 inference precision) or ov-default (OpenVINO's
      default precision: bfloat16 inside on a CPU with AVX512-BF16 or AMX). Reads DIR/input_K.pb, creates the
      session, runs it once. Reply: create_s (session creation), first_s (first run), peak_mb (peak resident
      memory during creation and the first runs above what the process had before).
  {"op": "time", "engine": E, "n": N}      N runs; reply: ms, the list of per-run times.
  {"op": "save", "engine": E, "dir": D}    writes the last outputs as D/output_K.pb.
  {"op": "close", "engine": E}
  {"op": "versions"}                       reply: the engines' versions.
Every reply has ok (and error when false). stdout carries only replies.
"""
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper


def status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def make_inputs(manifest, model, batch, out_dir):
    spec = json.load(open(manifest))[model]["inputs"]
    rng = np.random.default_rng(0)
    os.makedirs(out_dir, exist_ok=True)
    for k, inp in enumerate(spec):
        shape = [batch if d == "batch" else d for d in inp["shape"]]
        if inp["dtype"] == "int64":
            a = rng.integers(inp["low"], inp["high"], size=shape, dtype=np.int64)
        else:
            a = rng.standard_normal(shape, dtype=np.float32)
        with open(os.path.join(out_dir, f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(a, inp["name"]).SerializeToString())


def read_inputs(model_path, inputs_dir):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    feeds = {}
    for k, name in enumerate(names):
        t = onnx.TensorProto()
        with open(os.path.join(inputs_dir, f"input_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[name] = numpy_helper.to_array(t)
    return feeds


class Ort:
    def __init__(self, path, feeds, threads):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.feeds = feeds

    def run(self):
        return self.sess.run(None, self.feeds)


class OpenVino:
    def __init__(self, path, feeds, threads, precision):
        import openvino as ov
        core = ov.Core()
        config = {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
        if precision:
            config["INFERENCE_PRECISION_HINT"] = precision
        model = core.read_model(path)
        shapes = {name: list(v.shape) for name, v in feeds.items()}
        model.reshape(shapes)  # static shapes: OpenVINO's fast path, as ONNX Runtime specialises at run time
        self.compiled = core.compile_model(model, "CPU", config)
        self.request = self.compiled.create_infer_request()
        self.feeds = feeds

    def run(self):
        self.request.infer(self.feeds)
        return [self.request.get_output_tensor(k).data.copy() for k in range(len(self.compiled.outputs))]


def versions():
    v = {}
    try:
        import onnxruntime
        v["ort"] = onnxruntime.__version__
    except ImportError as e:
        v["ort_error"] = str(e)
    try:
        import openvino
        v["openvino"] = openvino.__version__
    except ImportError as e:
        v["openvino_error"] = str(e)
    return v


def main():
    engines, last = {}, {}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op, name = req["op"], req.get("engine")
            reply = {"ok": True}
            if op == "versions":
                reply.update(versions())
            elif op == "make_inputs":
                make_inputs(req["manifest"], req["model"], req["batch"], req["dir"])
            elif op == "open":
                feeds = read_inputs(req["model"], req["inputs"])
                reset_peak()
                before = status_mb("VmRSS")
                t0 = time.perf_counter()
                if name == "ort":
                    eng = Ort(req["model"], feeds, req["threads"])
                elif name in ("ov-f32", "ov-default"):
                    eng = OpenVino(req["model"], feeds, req["threads"], "f32" if name == "ov-f32" else None)
                else:
                    raise ValueError(f"unknown engine {name}")
                t1 = time.perf_counter()
                last[name] = eng.run()
                t2 = time.perf_counter()
                for _ in range(3):
                    eng.run()
                engines[name] = eng
                reply.update(create_s=t1 - t0, first_s=t2 - t1, peak_mb=status_mb("VmHWM") - before)
            elif op == "time":
                eng, ms = engines[name], []
                for _ in range(req["n"]):
                    t0 = time.perf_counter()
                    last[name] = eng.run()
                    ms.append((time.perf_counter() - t0) * 1e3)
                reply["ms"] = ms
            elif op == "save":
                os.makedirs(req["dir"], exist_ok=True)
                for k, a in enumerate(last[name]):
                    t = numpy_helper.from_array(np.ascontiguousarray(a))
                    with open(os.path.join(req["dir"], f"output_{k}.pb"), "wb") as f:
                        f.write(t.SerializeToString())
            elif op == "close":
                engines.pop(name, None)
                last.pop(name, None)
            else:
                raise ValueError(f"unknown op {op}")
        except Exception as e:  # noqa: BLE001 -- every failure goes back to sinter as a reply
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
