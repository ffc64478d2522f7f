"""Every knob of a generation run, typed, with the paper's values as presets (methods.md 7)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Extraction = Literal["kbx_first_fence", "ka_first_block"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClientConfig(Frozen):
    """The endpoint and how kbx treats it: clamps, retries, limits."""

    base_url: str | None = Field(None, description="OpenAI-compatible base URL, e.g. .../v1")
    model: str = Field("deepseek-chat", description="model id the server knows")
    max_tokens_cap: int | None = Field(None, ge=1, description="server's output cap; clamps")
    retries: int = Field(5, ge=0, description="retries of a call on 429, 5xx, timeouts")
    backoff_min_s: float = Field(1.0, ge=0, description="first backoff; doubles per retry")
    backoff_max_s: float = Field(60.0, ge=0, description="longest backoff")
    timeout_s: float = Field(600.0, gt=0, description="one HTTP request")
    concurrency: int = Field(64, ge=1, description="requests in flight at most")
    requests_per_min: float | None = Field(None, gt=0, description="request rate limit")
    tokens_per_min: float | None = Field(None, gt=0, description="token rate limit (in + out)")
    multi_n: bool = Field(True, description="ask for n > 1 choices in one request first")


class Sampling(Frozen):
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = Field(8192, ge=1)
    seed: int | None = None


class OneshotConfig(Frozen):
    """methods.md 7.1: one call per task and sample, no loop."""

    method: Literal["oneshot"] = "oneshot"
    preset: str = "claude"
    sampling: Sampling = Sampling()
    samples: int = Field(1, ge=1, description="independent samples per task (pass@k)")
    extraction: Extraction = "kbx_first_fence"


class GeakConfig(Frozen):
    """methods.md 7.2: GEAK v2 (GaAgent) with the paper's settings."""

    method: Literal["geak"] = "geak"
    preset: str = "geak"
    rounds: int = Field(3, ge=1)
    candidates: int = Field(4, ge=1, description="K: candidates per round")
    pool_size: int = Field(5, ge=1, description="performance pool (ancestor_num)")
    debug_threshold: int = Field(1, ge=1, description="exe passes that end debug mode")
    debug_cap: int = Field(5, ge=1, description="debug rounds before a fresh restart")
    temperature: float = 1.0
    code_max_tokens: int = 30_000
    reflect_max_tokens: int = 5_000
    score_max_tokens: int = 2_000
    history: int = Field(5, ge=1, description="snapshots kept per lineage, by LLM score")
    task_concurrency: int = Field(3, ge=1)
    llm_scoring: bool = True
    signatures: bool = Field(True, description="show the reference's def lines (GEAK's leak)")
    faithful_pool: bool = Field(False, description="the released pool-replacement quirk")
    fence_fallback: bool = Field(True, description="a python fence when the JSON parse fails")
    platform: str | None = Field(None, description="platform line; default from the device")
    corpus: Path | None = Field(None, description="one-shot corpus JSON; default: bundled")


class KernelAgentConfig(Frozen):
    """methods.md 7.3: TritonKernelAgent with the paper's settings."""

    method: Literal["kernelagent"] = "kernelagent"
    preset: str = "kernelagent"
    workers: int = Field(3, ge=1)
    rounds: int = Field(5, ge=1)
    history: int = Field(8, ge=1)
    test_timeout_s: float = Field(30.0, gt=0)
    seed_temperature: float = 0.8
    refine_temperature: float = 0.7
    test_max_tokens: int = 24_000
    kernel_max_tokens: int = 20_000
    history_clip: tuple[int, int, int] = Field(
        (500, 2000, 1000), description="characters kept of kernel, stderr, stdout per attempt"
    )
    task_concurrency: int = Field(1, ge=1, description="tasks at once, each with its workers")
    include_reference: bool = Field(False, description="add the PyTorch reference source")
    submit_on_failure: bool = Field(True, description="emit the last tested kernel on failure")
    extraction: Extraction = "ka_first_block"


MethodConfig = Annotated[
    OneshotConfig | GeakConfig | KernelAgentConfig, Field(discriminator="method")
]

ONESHOT_PRESETS: dict[str, tuple[str, Sampling]] = {
    "autotriton": (
        "ai9stars/AutoTriton",
        Sampling(temperature=0.6, top_p=0.95, max_tokens=16_384),
    ),
    "claude": ("claude-sonnet-4", Sampling(temperature=0.0, max_tokens=8192)),
    "deepseek-coder": ("deepseek-coder", Sampling(temperature=0.0, max_tokens=8192)),
}
PRESETS = (*ONESHOT_PRESETS, "geak", "kernelagent")
PAPER_MODEL = "deepseek-chat"  # DeepSeek-V3.2-Chat, the paper's GEAK and KernelAgent model


def preset(name: str, samples: int = 1) -> tuple[str, MethodConfig]:
    """The default model id and method config of a preset name (``PRESETS``)."""
    if name in ONESHOT_PRESETS:
        model, sampling = ONESHOT_PRESETS[name]
        return model, OneshotConfig(preset=name, sampling=sampling, samples=samples)
    if name == "geak":
        return PAPER_MODEL, GeakConfig()
    if name == "kernelagent":
        return PAPER_MODEL, KernelAgentConfig()
    raise ValueError(f"no preset {name!r}; the presets: {', '.join(PRESETS)}")


class Price(Frozen):
    """US dollars per million tokens."""

    input_per_mtok: float = Field(0.0, ge=0)
    output_per_mtok: float = Field(0.0, ge=0)


class RunConfig(Frozen):
    """What the manifest records: the method, the endpoint, the tasks and the prices."""

    method: MethodConfig
    client: ClientConfig
    device: str = "cpu"
    tasks: str | None = None
    prices: dict[str, Price] = Field(default_factory=dict)
