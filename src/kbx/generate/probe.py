"""One look at the endpoint before the first task: is it there, does it take the key, does it
serve the model?  A run against a dead or wrong endpoint otherwise spends minutes on retries
and writes an analysis of nothing (docs/design/generate.md, Failing loudly).

The probe asks for the models list; a server without one (404, 405) gets a one-token
completion instead.  It never retries: ``PROBE_S`` bounds it whatever the client's timeout.
"""

from __future__ import annotations

import openai

from kbx.generate.client import describe
from kbx.generate.config import ClientConfig

PROBE_S = 5.0  # the whole probe; a dead endpoint then stops the command within seconds
NO_LIST = (404, 405, 501)  # servers that do not list their models


async def probe(cfg: ClientConfig, api_key: str | None) -> str | None:
    """Why the endpoint cannot serve this run, in one line, or None."""
    where = cfg.base_url or "the client library's default host"
    api = openai.AsyncOpenAI(
        api_key=api_key or "EMPTY", base_url=cfg.base_url, max_retries=0, timeout=PROBE_S
    )
    try:
        served = await models(api)
        if served is None:
            await api.chat.completions.create(
                model=cfg.model, messages=[{"role": "user", "content": "ok"}], max_tokens=1
            )
        elif served and cfg.model not in served:
            shown = ", ".join(sorted(served)[:8]) + (", ..." if len(served) > 8 else "")
            return f"{where} does not serve the model {cfg.model!r} (it serves {shown}); --model"
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        return f"{where} refused the key ({describe(exc)}); the key is read from --api-key-env"
    except openai.NotFoundError as exc:
        return f"{where} does not serve the model {cfg.model!r} ({describe(exc)}); --model"
    except (openai.APIError, ValueError) as exc:
        return f"{where} cannot be used: {describe(exc)}"
    finally:
        await api.close()
    return None


async def models(api: openai.AsyncOpenAI) -> set[str] | None:
    """The model ids the server lists; None where it lists none (no such route)."""
    try:
        page = await api.models.list()
    except openai.APIStatusError as exc:
        if exc.status_code in NO_LIST:
            return None
        raise
    return {m.id for m in page.data}
