"""The checkpoints the model steps get (Llama-2, Llama-3.1, gpt-oss, DeepSeek-R1), one entry per family: which hub repository a (size,
precision) selection means, the revision a repository is pinned to, and which selection
MLCommons' R2 copy is. The R2 metadata URIs are the steps' default_env (users see and override
them there).

The reference repositories are also the benchmark table's `hf_model` (a unit test holds the two
equal). The steps do not import the table: a step is keyed on the code it imports, and an edit
of a latency limit must not download 16-130 GB again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import ModelError


@dataclass(frozen=True)
class ModelFamily:
    name: str                      # "Llama-2": for messages
    step: str                      # the script's alias (hooks find their family by it; its log is <step>.log)
    path_key: str                  # the family's own path output, beside CM_ML_MODEL_PATH
    repos: dict                    # (size, precision) -> hub repository; the first is the reference
    r2: tuple[str, str]            # the selection MLCommons' R2 copy is
    pinned: dict = field(default_factory=dict)   # repository -> the commit the reference checks out

    @property
    def default(self) -> tuple[str, str]:
        return next(iter(self.repos))

    def tags(self, size: str, precision: str) -> str:
        """The variation tags that select (size, precision); the default precision is implied."""
        return f"_{size}" if precision == self.default[1] else f"_{size},_{precision}"

    def repo(self, size: str, precision: str) -> str:
        try:
            return self.repos[(size, precision)]
        except KeyError:
            known = ", ".join(self.tags(s, p) for s, p in self.repos)
            raise ModelError(f"no known {self.name} checkpoint for size {size!r} with precision {precision!r}; "
                             f"known variants: {known}; or pass --repo_id=ORG/NAME or --checkpoint=DIR") from None

    def revision(self, repo: str, given: str = "") -> str:
        """The revision to fetch: the one given, else the commit the reference pins, else main."""
        return given or self.pinned.get(repo, "main")

    def check_r2(self, size: str, precision: str) -> None:
        if (size, precision) != self.r2:
            other = sorted({f"_{s}" for s, _ in self.repos if s != self.r2[0]} |
                           {f"_{p}" for _, p in self.repos if p != self.r2[1]})
            raise ModelError(f"_r2: MLCommons publishes only the {self.r2[0].upper()} {self.r2[1]} {self.name} "
                             f"checkpoint; drop {'/'.join(other)} or use the hub route (_hf)")


LLAMA2 = ModelFamily(
    name="Llama-2", step="get-ml-model-llama2", path_key="CM_ML_MODEL_LLAMA2_PATH",
    repos={("70b", "fp16"): "meta-llama/Llama-2-70b-chat-hf",        # stored as float16
           ("7b", "fp16"): "meta-llama/Llama-2-7b-chat-hf",
           ("70b", "fp8"): "nm-testing/Llama-2-70b-chat-hf-FP8",
           ("70b", "gptq"): "nm-testing/Llama-2-70B-Chat-GPTQ",
           ("7b", "fp8"): "neuralmagic/Llama-2-7b-chat-hf-FP8"},
    r2=("70b", "fp16"))

# language/llama3.1-8b/README.md: `git checkout be673f32...` after cloning the hub repository
LLAMA3 = ModelFamily(
    name="Llama-3.1", step="get-ml-model-llama3", path_key="CM_ML_MODEL_LLAMA3_PATH",
    repos={("8b", "bf16"): "meta-llama/Llama-3.1-8B-Instruct"},        # stored as bfloat16
    r2=("8b", "bf16"),
    pinned={"meta-llama/Llama-3.1-8B-Instruct": "be673f326cab4cd22ccfef76109faf68e41aa5f1"})

# language/gpt-oss-120b/README.md: openai/gpt-oss-120b at this commit; its own MXFP4 weights
GPT_OSS = ModelFamily(
    name="gpt-oss", step="get-ml-model-gpt-oss", path_key="CM_ML_MODEL_GPT_OSS_PATH",
    repos={("120b", "mxfp4"): "openai/gpt-oss-120b"},
    r2=("120b", "mxfp4"),
    pinned={"openai/gpt-oss-120b": "b5c939de8f754692c1647ca79fbf85e8c1e70f8a"})

# language/deepseek-r1/README.md: deepseek-ai/DeepSeek-R1 at this commit (its own FP8 weights), not
# DeepSeek-R1-0528, which MLCommons storage once served in its place (mlcommons/inference#2593): the
# hub route verifies the files against this commit's checksums
DEEPSEEK_R1 = ModelFamily(
    name="DeepSeek-R1", step="get-ml-model-deepseek-r1", path_key="CM_ML_MODEL_DEEPSEEK_R1_PATH",
    repos={("671b", "fp8"): "deepseek-ai/DeepSeek-R1"},
    r2=("671b", "fp8"),
    pinned={"deepseek-ai/DeepSeek-R1": "56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad"})

FAMILIES = {f.step: f for f in (LLAMA2, LLAMA3, GPT_OSS, DEEPSEEK_R1)}


def family_of(step: str) -> ModelFamily:
    try:
        return FAMILIES[step]
    except KeyError:
        raise ModelError(f"script {step!r} is not a model step of families.py; known: {', '.join(FAMILIES)} "
                         "(add its family to mlperf_llm/models/families.py)") from None
