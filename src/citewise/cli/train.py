"""``citewise train-reranker``: fine-tune the cross-encoder reranker and export it to ONNX.
The data preparation is :mod:`citewise.train.prepare`; this module maps the options onto it
and shows progress."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from citewise.cli.common import (
    build_engine,
    console,
    err_console,
    errors,
    plain_progress,
    progress_bar,
)
from citewise.config import Settings
from citewise.train import Loss

if TYPE_CHECKING:
    from citewise.engine import Engine
    from citewise.retrieve.retriever import Retriever
    from citewise.train.synthetic import Writer


def _index_retriever(engine: Engine) -> Retriever | None:
    """The configured index's retriever, or None while the index has no chunks."""
    return engine.retriever if engine.store.info().chunks else None


def _question_writer(engine: Engine) -> Writer | None:
    """The configured language model (the bundled one by default) as the writer of synthetic
    questions: greedy, at most 64 tokens; None when CITEWISE_LLM_PROVIDER is none."""
    provider = engine.provider()
    if provider is None:
        return None

    def write(system: str, user: str) -> str:
        return "".join(provider.stream([{"role": "system", "content": system},
                                        {"role": "user", "content": user}],
                                       max_tokens=64, temperature=0.0))

    return write


def train_reranker(
    out: Annotated[Path, typer.Argument(help="The .onnx file to write (int8 unless --no-quantize).")],
    scifact: Annotated[Path | None, typer.Option(
        help="SciFact BEIR folder: its qrels/train.tsv (never test) are used.")] = None,
    xquad: Annotated[list[Path] | None, typer.Option(
        help="XQuAD .json file (repeatable): the training articles are used.")] = None,
    cuad: Annotated[Path | None, typer.Option(
        help="CUAD v1 folder: clause questions over its train contracts (needs --legalbench).")] = None,
    legalbench: Annotated[Path | None, typer.Option(
        help="LegalBench-RAG folder: its CUAD contracts are kept out of training.")] = None,
    cuad_contracts: Annotated[int, typer.Option(
        min=0, help="CUAD: at most N train contracts, drawn with --seed (0 = all).")] = 0,
    code: Annotated[list[str] | None, typer.Option(
        help="Installed Python package (repeatable): docstring -> definition questions.")] = None,
    per_source: Annotated[int, typer.Option(
        min=0, help="At most N questions of each source, drawn with --seed (0 = all).")] = 0,
    jsonl: Annotated[list[Path] | None, typer.Option(
        help='Your own examples (repeatable): one {"query", "positive": [...], '
             '"negative": [...]} a line; chunk ids of the index or passage texts.')] = None,
    synthetic: Annotated[list[Path] | None, typer.Option(
        help="A file or folder of the index (repeatable): the language model writes a question "
             "for each of --synthetic-questions of its passages; negatives mined by search.")
    ] = None,
    synthetic_questions: Annotated[int, typer.Option(
        min=1, help="Passages asked about per --synthetic path, drawn with --seed.")] = 200,
    lora: Annotated[bool, typer.Option("--lora/--full",
                                       help="LoRA adapters over a frozen base, or full fine-tuning.")] = False,
    negatives: Annotated[int, typer.Option(min=1, help="Hard negatives per question.")] = 3,
    dev_queries: Annotated[int, typer.Option(
        min=0, help="SciFact train queries (last by id) kept out for development.")] = 0,
    max_queries: Annotated[int, typer.Option(min=0, help="At most N questions per source (0 = all).")] = 0,
    corpus_docs: Annotated[int, typer.Option(
        min=0, help="SciFact: index only the first N abstracts (0 = all 5,183).")] = 0,
    max_length: Annotated[int, typer.Option(min=16, max=512, help="Longest pair, in tokens.")] = 256,
    batch_size: Annotated[int, typer.Option(min=1, help="Pairs per optimiser step.")] = 16,
    group_size: Annotated[int, typer.Option(
        min=2, help="Pairs of one question in a step: 1 positive + hard negatives.")] = 4,
    loss: Annotated[Loss, typer.Option(
        help="listwise (softmax over each group + binary cross-entropy) or pointwise.")
    ] = Loss.LISTWISE,
    head_lr_scale: Annotated[float, typer.Option(
        min=0.0, help="Learning rate of the new head, as a multiple of --lr.")] = 20.0,
    init: Annotated[Path | None, typer.Option(
        help="Go on training a model folder saved by an earlier --save-torch.")] = None,
    epochs: Annotated[int, typer.Option(min=1)] = 1,
    lr: Annotated[float, typer.Option(min=0.0, help="Learning rate (0 = 5e-5 full, 5e-4 LoRA).")] = 0.0,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after N steps (0 = epochs).")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the head, the shuffling and dropout.")] = 0,
    quantize: Annotated[bool, typer.Option(help="Dynamic int8 quantisation of the export.")] = True,
    fp32_out: Annotated[Path | None, typer.Option(help="Also keep the fp32 .onnx here.")] = None,
    save_torch: Annotated[Path | None, typer.Option(
        help="Also save the PyTorch model folder here (a sentence-transformers CrossEncoder).")] = None,
    save_examples: Annotated[Path | None, typer.Option(
        help="Also write the training examples (mined negatives included) as JSONL here; "
             "--jsonl reads it back without mining again.")] = None,
) -> None:
    """Fine-tune a cross-encoder reranker from the bundled all-MiniLM-L6-v2 on (question,
    positive, hard negatives) examples and export it to ONNX; use it with
    CITEWISE_RERANKER_MODEL=OUT."""
    from citewise.train.data import pairs_of, write_jsonl
    from citewise.train.prepare import (
        TrainingRequest,
        check_request,
        gather_examples,
        read_user_files,
    )
    from citewise.train.reranker import TrainConfig, require_extra
    from citewise.train.reranker import train_reranker as train

    with errors():
        request = TrainingRequest(scifact=scifact, xquad=tuple(xquad or ()),
                                  jsonl=tuple(jsonl or ()), negatives=negatives,
                                  dev_queries=dev_queries, max_queries=max_queries,
                                  corpus_docs=corpus_docs, cuad=cuad, legalbench=legalbench,
                                  cuad_contracts=cuad_contracts, code=tuple(code or ()),
                                  per_source=per_source, seed=seed,
                                  synthetic=tuple(synthetic or ()),
                                  synthetic_questions=synthetic_questions)
        check_request(request, out, save_torch)
        require_extra(lora)  # before the minutes of mining hard negatives
        settings = Settings()
        config = TrainConfig(lora=lora, max_length=max_length, batch_size=batch_size,
                             epochs=epochs, lr=lr, max_steps=max_steps, seed=seed,
                             threads=settings.threads, quantize=quantize, group_size=group_size,
                             loss=loss.value, head_lr_scale=head_lr_scale,
                             init=str(init) if init else "")
        show = sys.stderr.isatty()
        user_files = read_user_files(request)  # every file checked before the slow part
        engines: list[Engine] = []

        def engine() -> Engine:  # opened once, and only when a source needs the index
            if not engines:
                engines.append(build_engine())
            return engines[0]

        write = _question_writer(engine()) if request.synthetic else None
        with progress_bar("preparing", show) as update:
            prepared = gather_examples(request, settings, user_files,
                                       lambda: _index_retriever(engine()),
                                       update or plain_progress, write)
        examples, sources = prepared.examples, prepared.sources
        pairs = pairs_of(examples)
        if save_examples:
            write_jsonl(save_examples, examples)
        err_console.print(f"{len(examples)} questions, {len(pairs)} pairs from "
                          f"{', '.join(sources)}")
        with progress_bar("training", show) as update:
            report = train(examples, out, config, fp32_out=fp32_out, save_torch=save_torch,
                           sources=sources, progress=update or plain_progress)
    console.print(f"wrote {report.onnx_path} ({report.onnx_bytes / 2**20:.1f} MiB"
                  f"{', int8' if report.quantized else ''}): {report.steps} steps over "
                  f"{report.pairs} pairs in {report.train_seconds:.0f} s, final loss "
                  f"{report.final_loss:.3f}; export {report.export_seconds:.0f} s")
