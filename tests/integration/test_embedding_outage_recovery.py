"""After an embedding outage under a burst of callers, the embedder works again at once.

Found by bench/load.py: with httpx's default cap of 100 connections,
requests queue for a slot during an outage; when one's pool wait times out just as the
pool creates a connection for it, httpcore leaves that connection in the pool for good
(state CONNECTING). After a 15 s outage under 400 simulated users every slot was such a
ghost: every embedding request — every write_memory and read_memory — failed with
PoolTimeout until the bot restarted. The client now has no cap (embedding/http.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter

from amrita_memory_pg.embedding.factory import create_embedder
from amrita_memory_pg.settings import load_settings
from amrita_memory_pg.testing import StubEmbeddingServer


async def test_the_embedder_recovers_after_an_outage_under_a_burst() -> None:
    with StubEmbeddingServer(dim=8, models=["m"]) as stub:
        settings = load_settings(
            env={},
            read_default_files=False,
            overrides={
                "embedding.protocol": "ollama-embed",
                "embedding.model_url": stub.url,
                "embedding.model_name": "m",
                "embedding.timeout_seconds": 0.5,
                "embedding.max_retries": 0,
            },
        )
        embedder = create_embedder(settings.embedding)
        rng = random.Random(7)

        async def one(tag: str, spread: float) -> str:
            await asyncio.sleep(rng.uniform(0, spread))
            try:
                await embedder.embed_passages([f"{tag} {time.monotonic()}"])
            except Exception as exc:
                # "... timed out (ReadTimeout, timeout 0.5 s)": the kind of timeout
                return str(exc).rpartition("(")[2].split(",")[0]
            return "ok"

        try:
            stub.delay_seconds = 2.0  # every request times out
            for wave in range(2):
                # 700 callers arriving over 2 s: far more in flight than httpx's old cap.
                started = time.monotonic()
                outcomes = Counter(
                    await asyncio.wait_for(
                        asyncio.gather(*(one(f"w{wave}-{i}", 2.0) for i in range(700))), 60
                    )
                )
                assert outcomes["ok"] < 700, outcomes  # the outage was felt
                # Nobody queued for a connection slot — the wait whose timeout left the
                # ghost connections behind (with the cap: ~600 of 700, 20 s per wave).
                assert outcomes["PoolTimeout"] == 0, outcomes
                assert time.monotonic() - started < 30, outcomes
            stub.delay_seconds = 0.0
            await asyncio.sleep(2.5)  # the stub's sleeping handlers finish
            # On a slow machine the stub may still be winding down 1,400 handler threads:
            # wait until one call gets through (bounded), then the burst must all succeed.
            for _ in range(40):  # at most ~20 s
                if await one("probe", 0.0) == "ok":
                    break
                await asyncio.sleep(0.5)
            # The bug left every slot a ghost: every later call failed with PoolTimeout, for
            # good. A loaded 2-core machine may still time a few reads out while the stub's
            # threads wind down, so the burst may run again (at most 3 times); no run may
            # see a PoolTimeout, and one run must be all ok.
            bursts: list[Counter[str]] = []
            for attempt in range(3):
                after = Counter(
                    await asyncio.gather(*(one(f"after{attempt}-{i}", 0.2) for i in range(50)))
                )
                bursts.append(after)
                assert after["PoolTimeout"] == 0, bursts
                if after == Counter({"ok": 50}):
                    break
                await asyncio.sleep(2.0)
            assert bursts[-1] == Counter({"ok": 50}), bursts
        finally:
            await embedder.aclose()
