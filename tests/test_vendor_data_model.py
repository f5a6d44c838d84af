"""knowledge_base/signatures/vendor_data_model.yaml: data, tokenizer, model-loading and numerics messages.

Each case is a short log as the library prints it, ending in the message the signature knows; the
analysis must report the signature and the category it stands for.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from catalog_checks import assert_signature_decides

from diag_service.domain import Category
from diag_service.kb.text import analyze_text

TAR_SHARD_IN_WORKER = (
    "Epoch 0:  12%|#2        | 120/1000 [01:10<08:35,  1.71it/s, loss=2.31]\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 140, in <module>\n'
    "    for batch in loader:\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/dataloader.py", line 1371, in _process_data\n'
    "    data.reraise()\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/_utils.py", line 694, in reraise\n'
    "    raise exception\n"
    "tarfile.ReadError: Caught ReadError in DataLoader worker process 3.\n"
    "Original Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop\n'
    "    data = fetcher.fetch(index)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/webdataset/tariterators.py", line 150, in tar_file_iterator\n'
    "    for tarinfo in stream:\n"
    '  File "/usr/lib/python3.10/tarfile.py", line 2331, in next\n'
    '    raise ReadError("unexpected end of data")\n'
    "tarfile.ReadError: unexpected end of data\n"
)

DECORD_VIDEO = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/data/video_dataset.py", line 77, in __getitem__\n'
    "    vr = VideoReader(path, ctx=cpu(0), num_threads=1)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/decord/video_reader.py", line 54, in __init__\n'
    "    self._handle = _CAPI_VideoReaderGetVideoReader(\n"
    '  File "/usr/local/lib/python3.10/dist-packages/decord/_ffi/base.py", line 78, in check_call\n'
    "    raise DECORDError(err_str)\n"
    "decord._ffi.base.DECORDError: [12:01:03] /github/workspace/src/video/video_reader.cc:83: ERROR opening: "
    "/data/videos/clip_000123.mp4, Invalid data found when processing input\n"
)

SOUNDFILE_AUDIO = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/asr/dataset.py", line 41, in __getitem__\n'
    "    wav, sr = sf.read(self.paths[idx])\n"
    '  File "/usr/local/lib/python3.10/site-packages/soundfile.py", line 285, in read\n'
    "    with SoundFile(file, 'r', samplerate, channels,\n"
    '  File "/usr/local/lib/python3.10/site-packages/soundfile.py", line 1296, in _open\n'
    '    raise LibsndfileError(err, prefix="Error opening {0!r}: ".format(self.name))\n'
    "soundfile.LibsndfileError: Error opening '/data/librispeech/train/103-1240-0042.flac': "
    "File contains data in an unknown format.\n"
)

PARQUET_FOOTER = (
    "Generating train split: 0 examples [00:00, ? examples/s]\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/datasets/packaged_modules/parquet/parquet.py", line 86, '
    "in _generate_tables\n"
    "    parquet_file = pq.ParquetFile(f)\n"
    '  File "/usr/local/lib/python3.10/site-packages/pyarrow/parquet/core.py", line 317, in __init__\n'
    "    self.reader.open(\n"
    '  File "pyarrow/error.pxi", line 91, in pyarrow.lib.check_status\n'
    "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is "
    "not a parquet file.\n"
)

MISSING_COLUMN = (
    "Map: 100%|##########| 52002/52002 [00:21<00:00, 2410.33 examples/s]\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/sft.py", line 120, in <module>\n'
    '    ds = ds.remove_columns(["instruction", "output"])\n'
    '  File "/usr/local/lib/python3.10/site-packages/datasets/arrow_dataset.py", line 2213, in remove_columns\n'
    "    raise ValueError(\n"
    "ValueError: Column to remove ['output'] not in the dataset. Current columns in the dataset: "
    "['instruction', 'input', 'response']\n"
)

CHAT_TEMPLATE_MISSING = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/sft.py", line 60, in <module>\n'
    "    text = tokenizer.apply_chat_template(msgs, tokenize=False)\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/tokenization_utils_base.py", line 1787, '
    "in get_chat_template\n"
    "    raise ValueError(\n"
    "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
    "argument was passed! For information about writing templates and setting the tokenizer.chat_template "
    "attribute, please see the documentation at https://huggingface.co/docs/transformers/main/en/chat_templating\n"
)

CHAT_TEMPLATE_ROLES = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/sft.py", line 60, in <module>\n'
    "    text = tokenizer.apply_chat_template(msgs, tokenize=False)\n"
    '  File "/usr/local/lib/python3.10/site-packages/jinja2/environment.py", line 1301, in render\n'
    "    self.environment.handle_exception()\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/utils/chat_template_utils.py", line 380, '
    "in raise_exception\n"
    "    raise jinja2.exceptions.TemplateError(message)\n"
    "jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/...\n"
)

TRUST_REMOTE_CODE = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 44, in <module>\n'
    "    config = AutoConfig.from_pretrained(args.model)\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1117, '
    "in from_pretrained\n"
    "    trust_remote_code = resolve_trust_remote_code(\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/dynamic_module_utils.py", line 678, '
    "in resolve_trust_remote_code\n"
    "    raise ValueError(\n"
    "ValueError: Loading /models/chatglm3-6b requires you to execute the configuration file in that repo on your "
    "local machine. Make sure you have read the code there to avoid malicious use, then set the option "
    "`trust_remote_code=True` to remove this error.\n"
)

REPO_ID_INVALID = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/utils/hub.py", line 402, in cached_file\n'
    "    resolved_file = hf_hub_download(\n"
    '  File "/usr/local/lib/python3.10/site-packages/huggingface_hub/utils/_validators.py", line 154, '
    "in validate_repo_id\n"
    "    raise HFValidationError(\n"
    "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
    "'namespace/repo_name': '/mnt/models/llama-3-8b/'. Use `repo_type` argument if needed.\n"
)

TOKENIZER_JSON_NEWER = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 50, in <module>\n'
    "    tokenizer = AutoTokenizer.from_pretrained(args.model)\n"
    '  File "/usr/local/lib/python3.10/site-packages/transformers/tokenization_utils_fast.py", line 111, '
    "in __init__\n"
    "    fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)\n"
    "Exception: data did not match any variant of untagged enum ModelWrapper at line 1251003 column 3\n"
)

EMBEDDING_INDEX = (
    "Token indices sequence length is longer than the specified maximum sequence length for this model "
    "(5000 > 2048). Running this sequence through the model will result in indexing errors\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 88, in <module>\n'
    "    out = model(**batch)\n"
    '  File "/usr/local/lib/python3.10/site-packages/torch/nn/functional.py", line 2264, in embedding\n'
    "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
    "IndexError: index out of range in self\n"
)

GRAD_NORM_NONFINITE = (
    "{'loss': 7.91, 'grad_norm': 812.5, 'learning_rate': 0.003, 'epoch': 0.4}\n"
    "Traceback (most recent call last):\n"
    '  File "/workspace/train.py", line 230, in <module>\n'
    "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)\n"
    '  File "/usr/local/lib/python3.10/site-packages/torch/nn/utils/clip_grad.py", line 65, in clip_grad_norm_\n'
    "    raise RuntimeError(\n"
    "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be "
    "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
    "`error_if_nonfinite=False`\n"
)

HALF_OVERFLOW = (
    "Traceback (most recent call last):\n"
    '  File "/workspace/model/attention.py", line 77, in forward\n'
    "    scores = scores.masked_fill(mask == 0, -1e9)\n"
    "RuntimeError: value cannot be converted to type at::Half without overflow\n"
)

# a trainer reads a field the dataset's rows do not have (datasets' LazyDict __getitem__ raises the KeyError)
ROW_MISSING_KEY = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/workspace/sft.py", line 60, in <module>\n'
    "[rank0]:     trainer = SFTTrainer(model, train_dataset=dataset, args=config)\n"
    '[rank0]:   File "/usr/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 401, in tokenize\n'
    "[rank0]:     element[dataset_text_field] if not is_conversational(element) else None,\n"
    '[rank0]:   File "/usr/lib/python3.11/site-packages/datasets/formatting/formatting.py", line 277, in __getitem__\n'
    "[rank0]:     value = self.data[key]\n"
    "[rank0]: KeyError: 'text'\n"
)

# A grayscale image among RGB ones, collated in a DataLoader worker (shared-memory batch): rank 1's traceback in the
# real zoo dev run b6_data_grayscale_collate_r1, as recorded.
_ZOO_CONSOLE = Path(__file__).resolve().parents[1] / "eval" / "zoo" / "runs" / "b6_data_grayscale_collate_r1" / "console.log"
COLLATE_IN_WORKER = "".join(ln for ln in _ZOO_CONSOLE.read_text().splitlines(keepends=True)
                            if ln.startswith("[default1]:[rank1]:"))

CASES = [
    pytest.param(COLLATE_IN_WORKER, "d_collate_unequal_size_shared", Category.DATA, id="collate-in-worker"),
    pytest.param(ROW_MISSING_KEY, "d_datasets_row_missing_key", Category.DATA, id="row-missing-key"),
    pytest.param(TAR_SHARD_IN_WORKER, "d_tar_shard_read_error", Category.DATA, id="tar-shard-in-worker"),
    pytest.param(DECORD_VIDEO, "d_decord_decode_error", Category.DATA, id="decord"),
    pytest.param(SOUNDFILE_AUDIO, "d_libsndfile_open_error", Category.DATA, id="libsndfile"),
    pytest.param(PARQUET_FOOTER, "d_parquet_not_parquet", Category.DATA, id="parquet-footer"),
    pytest.param(MISSING_COLUMN, "d_datasets_missing_column", Category.DATA, id="missing-column"),
    pytest.param(CHAT_TEMPLATE_MISSING, "d_chat_template_not_set", Category.CONFIG, id="chat-template-unset"),
    pytest.param(CHAT_TEMPLATE_ROLES, "d_chat_template_raised", Category.DATA, id="chat-template-roles"),
    pytest.param(TRUST_REMOTE_CODE, "d_hf_trust_remote_code", Category.CONFIG, id="trust-remote-code"),
    pytest.param(REPO_ID_INVALID, "d_hf_repo_id_invalid", Category.CONFIG, id="repo-id-invalid"),
    pytest.param(TOKENIZER_JSON_NEWER, "d_tokenizer_json_too_new", Category.CONFIG, id="tokenizer-json"),
    pytest.param(EMBEDDING_INDEX, "d_embedding_index_out_of_range", Category.DATA, id="embedding-index"),
    pytest.param(GRAD_NORM_NONFINITE, "d_grad_norm_nonfinite", Category.DATA, id="grad-norm-nonfinite"),
    pytest.param(HALF_OVERFLOW, "d_half_conversion_overflow", Category.USER_CODE, id="half-overflow"),
]


@pytest.mark.parametrize(("log", "signature_id", "category"), CASES)
def test_message_is_diagnosed(log: str, signature_id: str, category: Category) -> None:
    assert_signature_decides(log, signature_id, category)


def test_overflow_warnings_alone_do_not_decide() -> None:
    """A few fp16 overflow skips are normal: as symptoms they name no category on their own."""
    log = (
        "[2024-01-01 10:00:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 "
        "Skipping step. Attempted loss scale: 65536, reducing to 32768\n"
        "{'loss': 2.31, 'learning_rate': 1e-05, 'epoch': 0.01}\n"
    )
    d = analyze_text(log)
    assert "d_deepspeed_fp16_overflow_skip" in [h.signature_id for h in d.signature_hits]
    assert d.category == Category.UNKNOWN


def test_loss_scale_floor_after_overflows_is_divergence() -> None:
    """Repeated overflow skips ending at the loss-scale floor: the floor decides (a divergence, category left open: the
    batch, the learning rate or fp16's range), the overflows are what came before it."""
    log = (
        "[INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. "
        "Attempted loss scale: 2, reducing to 1\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/deepspeed/runtime/fp16/loss_scaler.py", line 170, '
        "in update_scale\n"
        "    raise Exception(\n"
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.\n"
    )
    d = analyze_text(log)
    assert d.primary_hit() is not None and d.primary_hit().signature_id == "fp16_min_loss_scale"
    assert d.category == Category.UNKNOWN and d.failure_mode.value == "fail_stop"
    assert d.confidence <= 0.7


def test_a_key_error_of_the_jobs_own_dict_is_not_a_dataset_field() -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/train.py", line 40, in main\n'
        "    lr = cfg['learning_rate']\n"
        "KeyError: 'learning_rate'\n"
    )
    d = analyze_text(log)
    assert "d_datasets_row_missing_key" not in [h.signature_id for h in d.signature_hits]
    assert d.category != Category.DATA
