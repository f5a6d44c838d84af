"""The zoo's scenarios: how each script was launched, what it found on disk, and what the outside world did.

The truth of each scenario (category, failure mode, faulty rank) is in ``labels.jsonl``, not here.
"""

from __future__ import annotations

import signal

from record import Scenario

TR = "torchrun --nproc-per-node"

SHARDS_JSON = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "the cat dog sat ran on a mat big small red blue".split()
for r in range(4):
    rng = random.Random(r)
    texts = [" ".join(rng.choice(words) for _ in range(6)) for _ in range(40)]
    for w in words:
        texts.append(w)
    if r == 3:
        texts.append("zebra crossing")
    json.dump(texts, open(f"data/shard_{r:02d}.json", "w"))
EOF"""

JSONL = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(2):
    rng = random.Random(r)
    with open(f"data/train-{r:05d}-of-00002.jsonl", "w") as f:
        for i in range(300):
            f.write(json.dumps({"x": [round(rng.random(), 4) for _ in range(8)], "y": round(rng.random(), 4)}) + "\n")
p = "data/train-00001-of-00002.jsonl"
raw = open(p).read()
open(p, "w").write(raw[: len(raw) * 2 // 3])  # copy interrupted mid-line
EOF"""

NPY = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("features", exist_ok=True)
for r in range(3):
    np.save(f"features/part{r}.npy", np.random.rand(2000, 48).astype(np.float32))
    np.save(f"features/part{r}_labels.npy", np.random.randint(0, 5, 2000))
raw = open("features/part0.npy", "rb").read()
open("features/part0.npy", "wb").write(raw[: len(raw) // 2])
EOF"""

NAN_SHARDS = r"""python - <<'EOF'
import os, torch
os.makedirs("data", exist_ok=True)
for r in range(3):
    x = torch.randn(480, 6)
    y = x.sum(1, keepdim=True)
    if r == 2:
        x[100:104, 3] = float("nan")  # sensor dropout exported as NaN
    torch.save({"x": x, "y": y}, f"data/shard{r}.pt")
EOF"""

CSV_FILES = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
for k in range(3):
    with open(f"data/part-{k:03d}.csv", "w") as f:
        f.write("a,b,c,target\n")
        for _ in range(200):
            a, b, c = (random.random() for _ in range(3))
            f.write(f"{a:.4f},{b:.4f},{c:.4f},{a + 2 * b - c:.4f}\n")
EOF"""

PT_TRUNC = r"""python - <<'EOF'
import os, torch
os.makedirs("cache", exist_ok=True)
torch.save({"input_ids": torch.randint(0, 1000, (4000, 16)), "labels": torch.randint(0, 2, (4000,))},
           "cache/tokenized_train.pt")
raw = open("cache/tokenized_train.pt", "rb").read()
open("cache/tokenized_train.pt", "wb").write(raw[: int(len(raw) * 0.6)])
EOF"""

LABELS_TSV = r"""python - <<'EOF'
import os, random
os.makedirs("labels", exist_ok=True)
for r in range(2):
    with open(f"labels/split{r}.tsv", "w") as f:
        for i in range(200):
            y = random.randrange(10)
            if r == 1 and i == 57:
                y = 12
            f.write(f"img_{r}_{i:04d}.png\t{y}\n")
EOF"""

ENERGY_CSV = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
with open("data/energy.csv", "w") as f:
    f.write("timestamp,temp,humidity,wind,load\n")
    for i in range(1500):
        t, h, w = random.uniform(-5, 35), random.uniform(10, 100), random.uniform(0, 20)
        hs = f"{h:.1f}" if i != 913 else "n/a"
        f.write(f"2026-01-{1 + i // 48:02d}T{(i % 48) // 2:02d}:{30 * (i % 2):02d},{t:.1f},{hs},{w:.1f},{100 + 3 * t - w:.2f}\n")
EOF"""

CKPT_TRUNC = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(40, 80), nn.ReLU(), nn.Linear(80, 40))
o = torch.optim.Adam(m.parameters())
m(torch.randn(2, 40)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": 1999}, "checkpoints/last.pt")
raw = open("checkpoints/last.pt", "rb").read()
open("checkpoints/last.pt", "wb").write(raw[: len(raw) // 2])  # node died during the save
EOF"""

MOUNT_SMALL = ("mkdir -p /mnt/ckpt && (mountpoint -q /mnt/ckpt && umount /mnt/ckpt || true) && "
               "mount -t tmpfs -o size=4m tmpfs /mnt/ckpt")
MOUNT_RO = ("mkdir -p /mnt/results && (mountpoint -q /mnt/results && umount /mnt/results || true) && "
            "mount -t tmpfs -o size=1m tmpfs /mnt/results && mount -o remount,ro /mnt/results")

SCENARIOS: list[Scenario] = [
    # user_code
    Scenario("uc_attr_module_rank0", "train.py", f"{TR}=2 --master-port={{port}} train.py"),
    Scenario("uc_shape_trainer", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py --width 128"),
    Scenario("uc_unused_params_spawn", "main.py", "python main.py"),
    Scenario("uc_eval_rank0_collective", "train_ddp.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train_ddp.py"),
    Scenario("uc_ddp_vocab_mismatch", "train.py",
             "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train.py", setup=SHARDS_JSON),
    Scenario("uc_lambda_workers", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py"),
    Scenario("uc_dataset_indexerror_worker", "train.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train.py"),
    Scenario("uc_dtype_mp_env", "launch.py", "python launch.py"),
    Scenario("uc_backward_twice_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
    Scenario("uc_inplace_residual", "train.py", f"{TR} 2 --standalone --tee 3 train.py"),
    Scenario("uc_nameerror_lastrank", "train.py", f"{TR} 4 --master-port {{port}} train.py"),
    Scenario("fsdp_rank0_full_state_dict", "train_fsdp.py", f"{TR} 2 --master-port {{port}} train_fsdp.py"),
    Scenario("uc_pipeline_recv_shape", "pipeline.py", f"{TR} 2 --tee 3 --master-port {{port}} pipeline.py"),
    # framework
    Scenario("fw_ddp_debug_detail_segv", "train.py", f"TORCH_DISTRIBUTED_DEBUG=DETAIL {TR} 3 --master-port {{port}} train.py"),
    Scenario("fw_ddp_debug_detail_faulthandler", "trainer.py",
             "TORCH_DISTRIBUTED_DEBUG=DETAIL PYTHONFAULTHANDLER=1 python -m torch.distributed.run --nproc-per-node 2 "
             "--log-dir logs --redirects 3 --master-port {port} trainer.py"),
    # config
    Scenario("cfg_no_master_addr", "train.py", "MASTER_PORT={port} python train.py"),
    Scenario("cfg_nccl_on_cpu", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("cfg_argparse_flag", "train.py", f"{TR} 2 --master-port {{port}} train.py --batch_size 64 --epochs 3"),
    Scenario("cfg_global_batch_divisible", "pretrain.py",
             f"{TR} 3 --tee 3 --master-port {{port}} pretrain.py --global-batch-size 64 --micro-batch-size 8"),
    Scenario("cfg_world_size_env", "run_workers.py", "python run_workers.py",
             env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "WORLD_SIZE": "4"}),
    Scenario("cfg_local_rank_plain_python", "train.py", "python train.py"),
    Scenario("cfg_nnodes_two_one_started", "train.py",
             "torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "--rdzv-id job42 --rdzv-conf join_timeout=20 train.py"),
    Scenario("cfg_gloo_ifname", "train.py", f"GLOO_SOCKET_IFNAME=ib0 {TR} 2 --master-port {{port}} train.py"),
    # data
    Scenario("data_jsonl_truncated", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=JSONL),
    Scenario("data_npy_truncated_spawn", "train.py", "python train.py", setup=NPY),
    Scenario("data_nan_guard", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", setup=NAN_SHARDS),
    Scenario("data_empty_shard", "train.py", "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train.py",
             setup=CSV_FILES),
    Scenario("data_pt_truncated", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             setup=PT_TRUNC),
    Scenario("data_label_oob_spawn", "train.py", "python train.py", setup=LABELS_TSV),
    Scenario("data_csv_malformed_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py", setup=ENERGY_CSV),
    # storage
    Scenario("st_disk_full_ckpt", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", setup=MOUNT_SMALL,
             teardown="umount /mnt/ckpt"),
    Scenario("st_readonly_metrics_spawn", "train.py", "python train.py", setup=MOUNT_RO, teardown="umount /mnt/results"),
    Scenario("st_missing_ckpt_dir", "train.py", f"{TR} 3 --master-port {{port}} train.py"),
    Scenario("st_corrupt_resume", "train.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py --resume checkpoints/last.pt", setup=CKPT_TRUNC),
    # host_oom
    Scenario("oom_cgroup_rank_cache", "train.py", f"{TR} 3 --master-port {{port}} train.py", action=("cgroup", 2, 700)),
    Scenario("oom_prlimit_alloc", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", action=("prlimit_as", 0, 400)),
    Scenario("oom_numpy_memoryerror", "train.py",
             "python -m torch.distributed.run --nproc-per-node 2 --log-dir logs --master-port {port} train.py",
             action=("prlimit_as", 1, 300)),
    Scenario("oom_worker_killed", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("cgroup", 1, 600)),
    # infrastructure
    Scenario("inf_port_in_use", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("hold_port",)),
    Scenario("inf_peer_sigterm", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py",
             action=("kill", 1, signal.SIGTERM, 8)),
    Scenario("inf_launcher_sigterm", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("kill_launcher", signal.SIGTERM, 8)),
    Scenario("inf_unreachable_rdzv", "train.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 192.0.2.10:29400 "
             "--rdzv-id exp7 --rdzv-conf read_timeout=15 train.py"),
    # hangs
    Scenario("hang_wait_for_file", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_thread_deadlock_spawn", "train.py", "python train.py"),
    Scenario("hang_collective_mismatch", "train.py", f"{TR} 3 --master-port {{port}} train.py"),
    Scenario("uc_allreduce_size_mismatch", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_monitored_barrier", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_uneven_shards", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py"),
]

# ---------------------------------------------------------------------------------------------------------
# Batch 2 (2026-12-04): network-like faults made on one host (a rank's TCP connections destroyed with
# `ss -K`), two torchrun agents as two nodes (c10d or static rendezvous on 127.0.0.1, console_node0/1.log),
# fail_slow runs with per-step timing lines, and more storage / data / config / hang kinds.

C10D2 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
         "--rdzv-id {rid} --rdzv-conf join_timeout=20")
STATIC2 = "torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port}"


def _c10d(rid: str, script: str, extra: str = "") -> str:
    return C10D2.replace("{rid}", rid) + f"{extra} {script}"


def _static(node: int, script: str) -> str:
    return STATIC2.replace("{node}", str(node)) + f" {script}"


TOKENS_NPY = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("tokens", exist_ok=True)
for k in range(2):
    np.save(f"tokens/shard_{k:03d}.npy", np.random.randint(0, 4096, 2_000_000).astype(np.uint16))
EOF"""

FEATURES_BIN = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("features", exist_ok=True)
for k in range(300):
    np.random.rand(100, 32).astype(np.float32).tofile(f"features/chunk_{k:04d}.bin")
EOF"""

TOKENIZED_JSON = r"""python - <<'EOF'
import json, os, random
os.makedirs("data/tokenized", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    vocab = 8000 if r != 2 else 32000  # part-02 was tokenized with the 32k tokenizer of the previous run
    json.dump([[rng.randrange(vocab) for _ in range(33)] for _ in range(400)], open(f"data/tokenized/part-{r:02d}.json", "w"))
EOF"""

PARQUET = r"""python - <<'EOF'
import os, random
import pyarrow as pa, pyarrow.parquet as pq
os.makedirs("data/train", exist_ok=True)
for k in range(4):
    rng = random.Random(k)
    feats = [[rng.random() for _ in range(12)] for _ in range(500)]
    pq.write_table(pa.table({"features": feats, "label": [rng.randrange(4) for _ in range(500)]}),
                   f"data/train/part-{k:05d}.parquet")
p = "data/train/part-00003.parquet"
raw = open(p, "rb").read()
open(p, "wb").write(raw[: len(raw) - 300])  # upload cut short: footer missing
EOF"""

ARROW = r"""python - <<'EOF'
import os, random
import pyarrow as pa
os.makedirs("cache", exist_ok=True)
t = pa.table({"embedding": [[random.random() for _ in range(16)] for _ in range(3000)],
              "score": [random.random() for _ in range(3000)]})
with pa.OSFile("cache/train.arrow", "wb") as sink:
    with pa.ipc.new_file(sink, t.schema) as w:
        w.write_table(t)
raw = open("cache/train.arrow", "rb").read()
open("cache/train.arrow", "wb").write(raw[: len(raw) * 7 // 10])  # cache written by a job that was killed
EOF"""

REVIEWS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(4):
    rng = random.Random(r)
    with open(f"data/reviews_{r}.jsonl", "w") as f:
        for i in range(400):
            rec = {"bow": [rng.random() for _ in range(50)], "rating": rng.randint(1, 5)}
            if r == 2 and i >= 250:  # rows appended from the new export, which renamed the field
                rec["stars"] = rec.pop("rating")
            f.write(json.dumps(rec) + "\n")
EOF"""

NUMPY_CKPT = r"""python - <<'EOF'
import os, numpy as np, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
o = torch.optim.Adam(m.parameters())
m(torch.randn(4, 20)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "epoch": 9,
            "best_acc": np.float64(0.913), "val_history": np.array([0.71, 0.85, 0.913])}, "checkpoints/last.pt")
EOF"""

OPT_CKPT = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 64); self.norm = nn.LayerNorm(64); self.fc2 = nn.Linear(64, 4)
    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))
m = Net()
o = torch.optim.AdamW(m.parameters(), weight_decay=0.01)  # the run was started before param groups were split
m(torch.randn(2, 32)).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optim": o.state_dict(), "epoch": 4}, "checkpoints/epoch_4.pt")
EOF"""

SHARD_META = r"""python - <<'EOF'
import json, os
os.makedirs("shards", exist_ok=True)
for r in range(3):
    for k in range(3):
        with open(f"shards/meta_{r}_{k}.json", "w") as f:
            text = json.dumps({"num_samples": 640, "batch": 16, "files": [f"s{r}{k}.bin"]})
            if r == 2 and k == 1:
                text = text[:0]  # metadata file left empty by the preprocessing job
            f.write(text)
EOF"""

SKEW_JSONL = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = [f"Word{i}," for i in range(3000)]
for r in range(3):
    rng = random.Random(r)
    with open(f"data/shard_{r}.jsonl", "w") as f:
        for i in range(1600):
            n = 60 if not (r == 2 and i >= 480) else 4000  # rank 2's shard turns into whole-book documents
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(n))}) + "\n")
EOF"""

MOUNT_SCRATCH = ("mkdir -p /mnt/scratch && (mountpoint -q /mnt/scratch && umount /mnt/scratch || true) && "
                 "mount -t tmpfs -o size=40m tmpfs /mnt/scratch")
REMOUNT_RO_AFTER_STEP100 = ("for i in $(seq 600); do [ -e /mnt/shared/ckpt/exp12/step_000100.pt ] && break; "
                            "sleep 0.1; done; mount -o remount,ro /mnt/shared")
MOUNT_SHARED = ("mkdir -p /mnt/shared && (mountpoint -q /mnt/shared && umount /mnt/shared || true) && "
                "mount -t tmpfs -o size=64m tmpfs /mnt/shared")

SCENARIOS += [
    # network: a rank's TCP connections destroyed from outside (`ss -K`) while it trains
    Scenario("net_ss_kill_rank1", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", action=("ss_kill", 1, 15)),
    Scenario("net_ss_kill_spawn", "train.py", "python train.py", action=("ss_kill", 0, "iter   300")),
    Scenario("net_ss_kill_twonode", "train.py", _c10d("job31", "train.py"), cmd2=_c10d("job31", "train.py"),
             action=("ss_kill", 2, 16)),
    # infrastructure: a node lost, a node preempted
    Scenario("inf_node0_lost_twonode", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py"),
             action=("kill_node", 0, signal.SIGKILL, 16)),
    Scenario("inf_node1_preempted_twonode", "train.py", _c10d("run-77", "train.py"), cmd2=_c10d("run-77", "train.py"),
             action=("kill_node_launcher", 1, signal.SIGTERM, "node1 step 100 "), cmd2_delay_s=3.0),
    # host_oom
    Scenario("oom_dataloader_workers_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py",
             action=("cgroup", 0, 1000)),
    Scenario("oom_graph_leak_spawn", "train.py", "python train.py", action=("cgroup", 1, 700)),
    Scenario("oom_twonode_cgroup", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py"),
             action=("cgroup", 3, 800)),
    # storage
    Scenario("st_safetensors_disk_full", "train.py", "python train.py", setup=MOUNT_SCRATCH,
             teardown="umount /mnt/scratch"),
    Scenario("st_remount_ro_midrun", "train.py", f"{TR} 2 --master-port {{port}} train.py", setup=MOUNT_SHARED,
             teardown="umount /mnt/shared", action=("shell", 0, REMOUNT_RO_AFTER_STEP100)),
    Scenario("st_mmap_truncated_sigbus", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", setup=TOKENS_NPY,
             action=("shell", 8, "truncate -s 65536 tokens/shard_001.npy")),
    Scenario("st_too_many_open_files", "train.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} train.py", setup=FEATURES_BIN,
             nofile=256),
    # data
    Scenario("data_token_id_oob_shard", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=TOKENIZED_JSON),
    Scenario("data_parquet_corrupt", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=PARQUET),
    Scenario("data_arrow_truncated_spawn", "train.py", "python train.py", setup=ARROW),
    Scenario("data_schema_missing_key", "train.py", "python train.py", setup=REVIEWS),
    # config
    Scenario("cfg_nproc_assert_tp", "train.py", f"{TR} 3 --master-port {{port}} train.py --tensor-parallel-size 2"),
    Scenario("cfg_dist_debug_typo", "train.py", f"TORCH_DISTRIBUTED_DEBUG=DEBUG {TR} 2 --master-port {{port}} train.py"),
    Scenario("cfg_weights_only_resume", "train.py",
             f"{TR} 2 --master-port {{port}} train.py --resume checkpoints/last.pt", setup=NUMPY_CKPT),
    Scenario("cfg_rdzv_id_mismatch_twonode", "train.py", _c10d("llm-sft-01", "train.py"),
             cmd2=_c10d("llm-sft-1", "train.py")),
    Scenario("cfg_nproc_mismatch_twonode", "train.py", _static(0, "train.py"),
             cmd2=_static(1, "train.py").replace("--nproc-per-node 2", "--nproc-per-node 1")),
    # user_code
    Scenario("uc_inplace_mask_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
    Scenario("uc_inference_mode_backward_spawn", "train.py", "python train.py"),
    Scenario("uc_target_shape", "train.py", f"{TR} 4 --master-port {{port}} train.py"),
    Scenario("uc_checkpoint_recompute", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py"),
    Scenario("uc_rank0_save_no_barrier", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("uc_twonode_typeerror", "train.py", _c10d("exp3", "train.py"), cmd2=_c10d("exp3", "train.py")),
    Scenario("uc_optimizer_groups_resume", "train.py", f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             setup=OPT_CKPT),
    # hangs
    Scenario("hang_loader_thread_died", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py", setup=SHARD_META),
    Scenario("hang_cpu_loop_rank1", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_two_group_order", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py"),
    Scenario("hang_fork_lock_worker", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hang_twonode_rank0_broadcast", "train.py", _static(0, "train.py"), cmd2=_static(1, "train.py")),
    # fail_slow
    Scenario("slow_cpu_hog_all", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("hog", "step 100 ", "0,1")),
    Scenario("slow_stopcont_rank1", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py",
             action=("stopcont", 1, 10, 100, 150)),
    Scenario("slow_data_skew_rank2", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=SKEW_JSONL),
    Scenario("slow_pin_hog_accel", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py",
             action=("pin_hog", 1, "[00:05<")),
    Scenario("slow_cpu_quota_spawn", "train.py", "python train.py", action=("cpu_quota", "it 30 ", 40)),
]

# ---- batch 3: Ray Train, transformers.Trainer, torchrun restarts, long noisy runs, more fail_slow ----

HOUSING_CSV = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
for k in range(3):
    rng = random.Random(k)
    with open(f"data/housing_{k:02d}.csv", "w") as f:
        f.write("f0,f1,f2,f3,f4,f5,price\n")
        for i in range(2000):
            xs = [rng.random() for _ in range(6)]
            price = f"{100 + 50 * xs[0] - 20 * xs[3]:.2f}"
            if k == 1 and i == 1377:
                price = '"1,204.50"'  # a row exported with a thousands separator
            f.write(",".join(f"{x:.4f}" for x in xs) + "," + price + "\n")
EOF"""

RAY = "python train.py"

SCENARIOS += [
    # Ray Train (TorchTrainer, gloo, CPU workers): the driver's console as the user sees it
    Scenario("ray_uc_ddp_attr", "train.py", RAY),
    Scenario("ray_kill_worker", "train.py", RAY, action=("ray_kill", 1, signal.SIGKILL, "epoch 3 ")),
    Scenario("ray_oom_worker_cache", "train.py", RAY, action=("ray_cgroup", 1, 800)),
    Scenario("ray_data_bad_row", "train.py", RAY, setup=HOUSING_CSV),
    Scenario("ray_hang_rank0_eval", "train.py", RAY),
    Scenario("ray_cfg_resources", "train.py", RAY, action=("kill_launcher", signal.SIGINT, "[FailurePolicy] RETRY")),
    Scenario("ray_slow_throttle_rank1", "train.py", "RAY_DEDUP_LOGS=0 python train.py",
             action=("ray_stopcont", 1, "rank=1 step 80 ", 100, 150)),
    Scenario("ray_kill_worker_restart", "train.py", RAY, action=("ray_kill", 1, signal.SIGKILL, "epoch 4 ")),
]

REVIEWS_VARLEN = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
good = "great good fine loved excellent works perfect".split()
bad = "bad broken awful hated poor returned slow".split()
filler = "the it this product was and very after a week of use i".split()
with open("data/reviews_train.jsonl", "w") as f:
    for i in range(800):
        y = rng.randrange(2)
        words = [rng.choice(filler) for _ in range(rng.randint(4, 30))] + [rng.choice(good if y else bad)]
        rng.shuffle(words)
        f.write(json.dumps({"text": " ".join(words), "label": y}) + "\n")
EOF"""

TOKENIZED_MIXED = r"""python - <<'EOF'
import json, os, random
os.makedirs("data/tokenized", exist_ok=True)
for k in range(4):
    rng = random.Random(k)
    hi = 8000 if k != 2 else 32000  # part 2 was tokenized with the 32k tokenizer of an older run
    with open(f"data/tokenized/part-{k}.jsonl", "w") as f:
        for _ in range(200):
            f.write(json.dumps({"input_ids": [rng.randrange(hi) for _ in range(64)]}) + "\n")
EOF"""

HF_CKPT_TRUNC = ("python train.py --max-steps 40 > /dev/null 2>&1 && "
                 "f=out/gpt2-tiny/checkpoint-40/model.safetensors && "
                 "head -c $(( $(stat -c %s $f) / 2 )) $f > $f.part && mv $f.part $f")  # the save was cut off
MOUNT_CKPT8 = ("mkdir -p /mnt/ckpt && (mountpoint -q /mnt/ckpt && umount /mnt/ckpt || true) && "
               "mount -t tmpfs -o size=8m tmpfs /mnt/ckpt")

SCENARIOS += [
    # transformers.Trainer (tiny models from a config, DDP over gloo on CPU)
    Scenario("hf_cfg_load_best", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
    Scenario("hf_uc_collator_pad", "train.py", f"{TR} 2 --master-port {{port}} train.py", setup=REVIEWS_VARLEN),
    Scenario("hf_st_disk_full", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py", setup=MOUNT_CKPT8,
             teardown="umount /mnt/ckpt"),
    Scenario("hf_st_resume_corrupt", "train.py",
             f"{TR} 2 --master-port {{port}} train.py --resume out/gpt2-tiny/checkpoint-40", setup=HF_CKPT_TRUNC),
    Scenario("hf_cfg_lr_typo_nan", "train.py",
             f"{TR} 2 --master-port {{port}} train.py --output_dir out/gpt2 --per_device_train_batch_size 16 "
             "--learning_rate 5e4 --warmup_steps 10 --max_steps 300 --logging_steps 10 --save_strategy no "
             "--report_to none --use_cpu"),
    Scenario("hf_data_token_oob", "train.py", f"{TR} 2 --master-port {{port}} train.py", setup=TOKENIZED_MIXED),
    Scenario("hf_inf_launcher_sigterm", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("kill_launcher", signal.SIGTERM, "'epoch': '0.5")),
]

UTF8_SHARDS = r"""python - <<'EOF'
import os, random
os.makedirs("corpus", exist_ok=True)
words = "model data train loss token layer the of and to in is for on with as by".split()
for r in range(3):
    rng = random.Random(r)
    with open(f"corpus/shard_{r:03d}.txt", "wb") as f:
        for i in range(4000):
            line = " ".join(rng.choice(words) for _ in range(rng.randint(8, 30)))
            if r == 2 and i == 2100:
                line = line[:20] + "\xe9t\xe9 caf\xe9"  # a latin-1 document in a utf-8 corpus
                f.write(line.encode("latin-1") + b"\n")
                continue
            f.write(line.encode() + b"\n")
EOF"""

NOISY = "TORCH_CPP_LOG_LEVEL=INFO TORCH_DISTRIBUTED_DEBUG=INFO"

SCENARIOS += [
    # torchrun --max-restarts: the failure recurs after the restart, or the restarted group completes
    Scenario("restart_uc_view_recurs", "train.py", f"{TR} 2 --max-restarts 2 --master-port {{port}} train.py"),
    Scenario("restart_kill_then_completes", "train.py", f"{TR} 2 --max-restarts 1 --master-port {{port}} train.py",
             action=("kill", 1, signal.SIGKILL, "[rank 1] step 120 ")),
    Scenario("restart_hang_eval_recurs", "train.py", f"{TR} 2 --max-restarts 1 --tee 3 --master-port {{port}} train.py"),
    Scenario("restart_cfg_batch_recurs", "train.py",
             f"{TR} 2 --max-restarts 2 --master-port {{port}} train.py --global-batch-size 100 --micro-batch-size 16"),
    # long runs: hundreds of logged steps, asctime logging, C++/distributed debug logging, start-up warnings
    Scenario("long_uc_sched_index", "pretrain.py", f"{NOISY} {TR} 2 --log-dir logs --tee 3 --master-port {{port}} pretrain.py"),
    Scenario("long_data_utf8_rank2", "train.py",
             f"TORCH_CPP_LOG_LEVEL=INFO {TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py", setup=UTF8_SHARDS),
    Scenario("long_oom_outputs_rank1", "train.py", f"{NOISY} {TR} 2 --master-port {{port}} train.py",
             action=("cgroup", 1, 700)),
    Scenario("long_net_ss_kill_rank0", "train.py", f"TORCH_CPP_LOG_LEVEL=INFO {TR} 2 --tee 3 --master-port {{port}} train.py",
             action=("ss_kill", 0, "rank 0 step 400 ")),
    # fail_slow with a baseline: >= 150 logged steps per rank
    Scenario("slow_stopcont_rank1_step80", "train.py", f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             action=("stopcont", 1, "[rank1] step 80 ", 100, 150)),
    Scenario("slow_quota_midrun", "train.py", f"{TR} 2 --master-port {{port}} train.py", action=("cpu_quota", "step  100 ", 30)),
    Scenario("slow_uc_auc_history", "train.py", f"{TR} 2 --master-port {{port}} train.py"),
]

MOUNT_NFS_SMALL = ("mkdir -p /mnt/nfs && (mountpoint -q /mnt/nfs && umount /mnt/nfs || true) && "
                   "mount -t tmpfs -o size=16m tmpfs /mnt/nfs")

SCENARIOS += [
    Scenario("long_st_ckpt_fills_disk", "train.py", f"{NOISY} {TR} 2 --tee 3 --master-port {{port}} train.py",
             setup=MOUNT_NFS_SMALL, teardown="umount /mnt/nfs"),
    Scenario("hf_hang_rank0_callback", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("kill_launcher", signal.SIGINT, 75)),  # the user gives up and presses Ctrl-C
]

PT_SHARDS_ONE_BAD = r"""python - <<'EOF'
import os, torch
os.makedirs("data", exist_ok=True)
for r in range(2):
    x = torch.randn(2000, 16)
    torch.save({"x": x, "y": x.sum(1, keepdim=True)}, f"data/shard{r}.pt")
raw = open("data/shard0.pt", "rb").read()
open("data/shard0.pt", "wb").write(raw[: len(raw) * 3 // 4])  # the upload of shard 0 was cut off
EOF"""


def _c10d_restarts(n: int) -> str:
    return (f"{TR} 2 --nnodes 1 --max-restarts {n} --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
            "--rdzv-id job-17 train.py")


SCENARIOS += [
    Scenario("restart_c10d_shard_recurs", "train.py", _c10d_restarts(2), setup=PT_SHARDS_ONE_BAD),
    Scenario("hf_slow_stopcont_rank0", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("stopcont", 0, "'epoch': '0.2", 100, 150)),
]

# ---- batch 4: fail_slow with a clean baseline in many log formats, and clean control runs (clean/runs/) ----

SCENARIOS += [
    Scenario("slow4_hf_tqdm_hog_all", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("hogx", "| 80/500 [", None, "0,1", 1, 1.0)),
]
SCENARIOS += [
    Scenario("slow4_msstep_quota_4r", "train.py", f"{TR} 4 --master-port {{port}} train.py",
             action=("quota_until", "step 150/", None, 70)),
]

REVIEWS_SKEW = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "good bad fine great poor slow fast broken works love hate the a it this was very not".split()
for p in range(2):
    rng = random.Random(p)
    with open(f"data/reviews_part{p}.jsonl", "w") as f:
        for i in range(9600):
            n = 30 if not (p == 1 and i >= 2400) else 220  # part 1's rows after 1600 come from the long-form export
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(n)), "label": rng.randrange(2)}) + "\n")
EOF"""

SCENARIOS += [
    Scenario("slow4_hf_nobar_stopcont_r1", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("stopcont_until", 1, "step 400:", None, 200, 100)),
    Scenario("slow4_tqdm_loop_quota", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("quota_until", "[00:03<", None, 60)),
    Scenario("slow4_accel_data_r1", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py", setup=REVIEWS_SKEW),
    Scenario("slow4_ray_stopcont_r0", "train.py", "RAY_DEDUP_LOGS=0 python train.py",
             action=("ray_stopcont", 0, "[iter 100]", 50, 100)),
    Scenario("slow4_logdir_stall5_r2", "train.py", f"{TR} 3 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             action=("stall_every", 2, "rank2 step 100 ", r"rank2 step (\d+) ", 5, 150)),
    Scenario("slow4_logging_pinhog_r1", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("pin_hogx", 1, "step 200 recon", 2)),
]

RECORDS_HISTORY = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    with open(f"data/part-{r:02d}.jsonl", "w") as f:
        for i in range(17600):
            rec = {"features": [round(rng.random(), 4) for _ in range(64)], "label": rng.randrange(5)}
            if r == 0 and i >= 8000:  # part 00's later rows were exported with the raw event history attached
                rec["history"] = [{"t": k, "v": round(rng.random(), 3)} for k in range(600)]
            f.write(json.dumps(rec) + "\n")
EOF"""

SCENARIOS += [
    Scenario("slow4_uc_grow_history", "train.py", f"{TR} 3 --master-port {{port}} train.py"),
    Scenario("slow4_elapsed_episode_hog", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("hogx", "it: 150 ", "it: 400 ", "0,1", 2, 1.0)),
    Scenario("slow4_tokens_stopcont_r3", "train.py", f"{TR} 4 --master-port {{port}} train.py",
             action=("stopcont_until", 3, "step   150 ", None, 300, 90)),
    Scenario("slow4_samples_data_r0", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=RECORDS_HISTORY),
    Scenario("slow4_epochbatch_stall10_r1", "train.py", f"{TR} 3 --master-port {{port}} train.py",
             action=("stall_every", 1, "[rank1] Epoch 1 Batch 60/", r"\[rank1\] Epoch \d+ Batch (\d+)/", 10, 400)),
    Scenario("slow4_hf_tqdm_hogduty_mild", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             action=("hogx", "| 150/700 [", None, "0,1", 1, 0.3)),
    Scenario("slow4_logdir_episode_stopcont_r1", "train.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train.py",
             action=("stopcont_until", 1, "step 150 loss", "step 400 loss", 100, 100)),
    Scenario("slow4_accel_tqdm_uc_gradnorm", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
]

# clean control runs (no fault; written under clean/runs/<id>/, labels in clean/labels.jsonl)
DOCS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "stock price rose fell team won match lost rain sun model chip launch vote law court".split()
for r in range(2):
    rng = random.Random(r)
    with open(f"data/docs_{r}.jsonl", "w") as f:
        for i in range(1600):
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(150, 300))),
                                "label": rng.randrange(4)}) + "\n")
EOF"""

SCENARIOS += [
    Scenario("clean_hf_tqdm_eval_save", "train.py", f"{TR} 2 --master-port {{port}} train.py", clean=True),
    Scenario("clean_hf_nobar_lr", "train.py", f"{TR} 2 --master-port {{port}} train.py", clean=True),
    Scenario("clean_tqdm_warmup_cache", "train.py", f"{TR} 2 --master-port {{port}} train.py", setup=DOCS, clean=True),
    Scenario("clean_accel_ckpt", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py", clean=True),
    Scenario("clean_ray_report_ckpt", "train.py", "RAY_DEDUP_LOGS=0 python train.py", clean=True),
    Scenario("clean_logdir_eval", "train.py", f"{TR} 3 --log-dir logs --redirects 3 --master-port {{port}} train.py",
             clean=True),
    Scenario("clean_logging_lr_ckpt", "train.py", f"{TR} 2 --master-port {{port}} train.py", clean=True),
    Scenario("clean_msstep_eval_4r", "train.py", f"{TR} 4 --master-port {{port}} train.py", clean=True),
    Scenario("clean_elapsed_ckpt", "train.py", f"{TR} 2 --master-port {{port}} train.py", clean=True),
    Scenario("clean_tokens_warmup_save", "train.py", f"{TR} 3 --master-port {{port}} train.py", clean=True),
]

# ---- batch 5 (2026-12-05): more fail_stop / fail_hang kinds, fail_slow in other formats, clean controls ----

SCENARIOS += [
    # the container's /dev/shm is docker's default 64 MiB; DataLoader workers hand batches over in shared memory
    Scenario("b5_shm_bus_error", "train.py", f"{TR} 2 --master-port {{port}} train.py", shm_mb=64),
]
SCENARIOS += [
    # rank 1's DataLoader workers (not the rank itself) end up in a 300 MiB memory cgroup
    Scenario("b5_oom_worker_cgroup_r1", "train_audio.py",
             "python -m torch.distributed.run --nproc-per-node 3 --log-dir logs --tee 3 --master-port {port} "
             "train_audio.py", action=("worker_cgroup", 1, 300, "[rank1] epoch 0 step 5/")),
]

# a checkpoint written by a 4-rank run of the same script (ZeRO-1 style: one optimizer slice per rank)
ZERO_CKPT_4 = r"""python - <<'EOF'
import math, os, torch, torch.nn as nn
d = "ckpt/step_000800"
os.makedirs(d, exist_ok=True)
m = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
torch.save(m.state_dict(), f"{d}/model.pt")
n = sum(p.numel() for p in m.parameters())
shard = math.ceil(n / 4)
for r in range(4):
    k = min(n, (r + 1) * shard) - r * shard
    torch.save({"exp_avg": torch.randn(k) * 1e-3, "exp_avg_sq": torch.rand(k) * 1e-6, "step": 800}, f"{d}/zero_rank{r}.pt")
EOF"""

SCENARIOS += [
    Scenario("b5_cfg_resume_world_size", "train.py",
             "torchrun --standalone --nproc-per-node 2 train.py --resume ckpt/step_000800", setup=ZERO_CKPT_4),
]

# a DCP checkpoint of the same TinyLM trained with --hidden 192 (the pre-training run's config)
DCP_CKPT_192 = r"""python - <<'EOF' 2>/dev/null
import importlib.util, sys, torch.distributed.checkpoint as dcp
spec = importlib.util.spec_from_file_location("train", "train.py")
train = importlib.util.module_from_spec(spec); spec.loader.exec_module(train)
m = train.TinyLM(2048, 192, 2, 4)
dcp.save(m.state_dict(), checkpoint_id="checkpoints/pretrain_step_5000")
EOF"""

SCENARIOS += [
    Scenario("b5_cfg_fsdp2_load_hidden", "train.py",
             f"{TR} 2 --tee 3 --master-port {{port}} train.py --resume checkpoints/pretrain_step_5000 --steps 100",
             setup=DCP_CKPT_192),
]
SCENARIOS += [
    Scenario("b5_hang_faulthandler_loop_r2", "train_lm.py",
             f"{TR} 3 --log-dir logs --tee 2 --master-port {{port}} train_lm.py"),
]
SCENARIOS += [
    # the on-call engineer runs `py-spy dump` on every rank a few seconds after the progress lines stop
    Scenario("b5_hang_pyspy_abba_r1", "train.py", "python train.py",
             action=("pyspy", "[rank1] checkpoint step 30 queued", 2, 8.0)),
]

STATIC2_T = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {p} "
             "--rdzv-conf timeout=20 train.py")

SCENARIOS += [
    # node 1 was started with the port of the previous job's launch script
    Scenario("b5_cfg_master_port_twonode", "train.py", STATIC2_T.replace("{node}", "0").replace("{p}", "{port}"),
             cmd2=STATIC2_T.replace("{node}", "1").replace("{p}", "{port_next}")),
]
SCENARIOS += [
    # the job script names the head node by a hostname this node cannot resolve (the cluster's name is gpu-head-1)
    Scenario("b5_cfg_rdzv_hostname", "train_clip.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint gpu-head-01:29400 "
             "--rdzv-id clip-pt-3 --rdzv-conf join_timeout=20,read_timeout=15 train_clip.py"),
]
SCENARIOS += [
    Scenario("b5_accel_main_first_timeout", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py"),
]
SCENARIOS += [
    # the job script retries once; rank 0 gets SIGTERM while it writes the step-200 checkpoint
    Scenario("b5_inf_sigterm_during_save_r0", "train.py",
             f"for attempt in 1 2; do echo \"== attempt $attempt\"; {TR} 2 --master-port {{port}} train.py && break; "
             "done",
             action=("kill_when_file", 0, signal.SIGTERM, "checkpoints/step_000200.pt", 8_000_000)),
]

SHARED_FEATURES = ("mkdir -p /mnt/shared && (mountpoint -q /mnt/shared && umount /mnt/shared || true) && "
                   "mount -t tmpfs -o size=64m tmpfs /mnt/shared && mkdir -p /mnt/shared/features && "
                   "python -c \"import numpy as np; [np.save(f'/mnt/shared/features/part-{r:03d}.npy', "
                   "np.random.rand(9600, 41).astype(np.float32)) for r in range(2)]\"")
# rank 1's shard vanishes from the shared filesystem for 3 s (a sync job replacing it) and comes back
FEATURES_BLIP = ("mv /mnt/shared/features/part-001.npy /mnt/shared/.part-001.npy.sync && sleep 3 && "
                 "mv /mnt/shared/.part-001.npy.sync /mnt/shared/features/part-001.npy")

SCENARIOS += [
    Scenario("b5_restart_storage_transient_r1", "train.py",
             f"{TR} 2 --max-restarts 1 --master-port {{port}} train.py", setup=SHARED_FEATURES,
             teardown="umount /mnt/shared", action=("shell", "[rank1] epoch 1 step 100 ", FEATURES_BLIP)),
]

# the pre-training run saved model.state_dict() of its DDP wrapper (keys start with "module.")
DDP_PREFIX_CKPT = r"""python - <<'EOF'
import importlib.util, os, torch
spec = importlib.util.spec_from_file_location("finetune", "finetune.py")
ft = importlib.util.module_from_spec(spec); spec.loader.exec_module(ft)
os.makedirs("pretrained", exist_ok=True)
torch.save({f"module.{k}": v for k, v in ft.Encoder().state_dict().items()}, "pretrained/encoder_final.pt")
EOF"""

SCENARIOS += [
    Scenario("b5_uc_module_prefix_load", "finetune.py",
             "torchrun --standalone --nproc-per-node 3 --log-dir logs --redirects 3 finetune.py", setup=DDP_PREFIX_CKPT),
]

# fail_slow with a clean baseline (>= 40 logged steps before the onset)
SCENARIOS += [
    Scenario("b5_slow_megatron_hog", "pretrain_gpt.py",
             f"{TR} 2 --master-port {{port}} pretrain_gpt.py --train-iters 600 --log-interval 10",
             action=("hogx", "iteration      200/", None, "0,1", 1, 1.0)),
]

# manifests of 8000 photos per rank; from row 3200 (step 200) rank 1's part comes from the full-resolution export
PHOTO_MANIFESTS = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    with open(f"data/manifest_{r}.tsv", "w") as f:
        for i in range(8000):
            w, h = (96, 96) if not (r == 1 and i >= 3200) else (256, 256)
            f.write(f"{r * 100000 + i}\t{w}\t{h}\t{rng.random():.4f}\n")
EOF"""

SCENARIOS += [
    Scenario("b5_slow_jsonl_data_r1", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=PHOTO_MANIFESTS),
]
SCENARIOS += [
    # rank 2 stopped 100 ms of every 150 ms from epoch 2 step 50 (global step 200 of 600)
    Scenario("b5_slow_epochstep_stopcont_r2", "train_cnn.py", f"{TR} 3 --master-port {{port}} train_cnn.py",
             action=("stopcont_until", 2, "Epoch [2/4], Step [50/150]", None, 50, 100)),
]
SCENARIOS += [
    # the command line kept a debugging flag from an earlier NaN hunt
    Scenario("b5_slow_asctime_uc_anomaly", "train_tagger.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_tagger.py "
             "--epochs 3 --steps-per-epoch 150 --detect-anomaly-from-epoch 1"),
]

# clean control runs (no fault; clean/runs/<id>/)
SCENARIOS += [
    Scenario("clean5_megatron_eval_ckpt", "pretrain_gpt.py",
             f"{TR} 2 --master-port {{port}} pretrain_gpt.py --train-iters 600 --eval-interval 200 --save-interval 300",
             clean=True),
]

PHOTO_MANIFESTS_EVEN = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    with open(f"data/manifest_{r}.tsv", "w") as f:
        for i in range(8010):
            f.write(f"{r * 100000 + i}\t96\t96\t{rng.random():.4f}\n")
EOF"""

SCENARIOS += [
    Scenario("clean5_jsonl_dcp_logdir", "train.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train.py",
             setup=PHOTO_MANIFESTS_EVEN, clean=True),
]
SCENARIOS += [
    Scenario("clean5_accel_slow_start", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py", clean=True),
]
SCENARIOS += [
    Scenario("clean5_spawn_eval_pause", "train.py", "python train.py", clean=True),
]

C10D2_1P = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id mixer-4 --rdzv-conf join_timeout=20 train.py")

SCENARIOS += [
    # node 1's job script exports the compiler of another toolchain module that this node does not have
    Scenario("b5_cfg_compile_cxx_node1", "train.py", C10D2_1P, cmd2=f"CXX=g++-13 {C10D2_1P}"),
]

TWEETS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "love hate great awful movie phone service slow fast happy sad good bad".split()
for r in range(4):
    rng = random.Random(r)
    with open(f"data/tweets_{r}.jsonl", "w") as f:
        for i in range(1600):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(4, 15)))
            if rng.random() < 0.3:
                text = f"@user{i} " + text + " https://t.co/x" + str(i)
            if r == 3 and i == 1234:
                text = "RT @newsbot https://t.co/a1b2c3"  # a retweet holding only a mention and a link
            f.write(json.dumps({"text": text, "label": rng.randrange(2)}) + "\n")
EOF"""

SCENARIOS += [
    Scenario("b5_data_empty_doc_nan_r3", "train.py",
             "python -m torch.distributed.run --nproc_per_node=4 --master_port={port} train.py", setup=TWEETS),
]
SCENARIOS += [
    # from step 300 rank 1's connections are shaped to 2 Gbit/s (a link that renegotiated down / a congested port)
    Scenario("b5_slow_net_rate_r1", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py",
             teardown="tc qdisc del dev lo root 2>/dev/null || true", action=("tc_rate", 1, "rank 1 step 300 ", "2gbit")),
]
SCENARIOS += [
    # from its iteration 400 rank 1's link carries almost nothing (8 kbit/s, no reset): the collectives time out
    Scenario("b5_net_link_dead_r1", "train.py", f"{TR} 2 --master-port {{port}} train.py",
             teardown="tc qdisc del dev lo root 2>/dev/null || true", action=("tc_rate", 1, "[rank1] it 400 ", "8kbit")),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 6 (ids b6_*)

SCENARIOS += [
    # rank 0's container holds 1.1 GiB; its checkpoint is serialised into memory before the upload
    Scenario("b6_oom_ckpt_bytesio_r0", "pretrain_ae.py",
             f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} pretrain_ae.py",
             action=("cgroup", 0, 1100)),
]

EARLY_STOP_DATA = r"""python - <<'EOF'
import os, torch
os.makedirs("data", exist_ok=True)
w = torch.randn(20, 1)
for r in range(3):
    g = torch.Generator().manual_seed(r)
    x = torch.randn(640, 20, generator=g)
    torch.save({"x": x, "y": x @ w + 0.1 * torch.randn(640, 1, generator=g)}, f"data/train_{r}.pt")
    xv = torch.randn(128, 20, generator=g)
    yv = xv @ w + 0.1 * torch.randn(128, 1, generator=g)
    if r == 2:
        yv = -yv  # this shard's validation labels came from the export with the inverted sentiment scale
    torch.save({"x": xv, "y": yv}, f"data/val_{r}.pt")
EOF"""

SCENARIOS += [
    Scenario("b6_uc_early_stop_local_r2", "train.py", f"{TR} 3 --master-port {{port}} train.py",
             setup=EARLY_STOP_DATA),
]
SCENARIOS += [
    Scenario("b6_uc_lambda_sched_ckpt_r0", "finetune_lm.py",
             f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} finetune_lm.py"),
]
SCENARIOS += [
    Scenario("b6_uc_spawn_args_order", "train.py", "python train.py --gpus 2 --port {port}"),
]
SCENARIOS += [
    Scenario("b6_uc_ray_pickle_file", "train_ray.py", "python train_ray.py"),
]
SCENARIOS += [
    Scenario("b6_uc_fsdp2_submodule_eval", "train_fsdp.py",
             "torchrun --standalone --nproc-per-node 2 train_fsdp.py --epochs 3 --steps-per-epoch 30"),
]
SCENARIOS += [
    # the job script pastes host:port into MASTER_PORT
    Scenario("b6_cfg_master_port_addr", "train.py",
             "MASTER_ADDR=127.0.0.1 MASTER_PORT=127.0.0.1:{port} NUM_WORKERS=2 python train.py"),
]

STATIC_1P = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
             "train_asr.py")
SCENARIOS += [
    # node 1 runs the older launch script with --d-model 384
    Scenario("b6_cfg_dmodel_mismatch_twonode", "train_asr.py", STATIC_1P.replace("{node}", "0") + " --d-model 256",
             cmd2=STATIC_1P.replace("{node}", "1") + " --d-model 384"),
]
SCENARIOS += [
    Scenario("b6_cfg_hardcoded_world_size", "train.py", f"{TR} 2 --tee 3 --master-port {{port}} train.py"),
]

CLICK_GZ = r"""python - <<'EOF'
import gzip, json, os, random
os.makedirs("data/clicks", exist_ok=True)
for r in range(4):
    rng = random.Random(r)
    p = f"data/clicks/part-{r:05d}.jsonl.gz"
    with gzip.open(p, "wt") as f:
        for i in range(20000):
            f.write(json.dumps({"id": r * 10**6 + i, "f": [round(rng.random(), 4) for _ in range(24)],
                                "click": int(rng.random() < 0.1)}) + "\n")
    if r == 2:  # the copy from the bucket was interrupted
        raw = open(p, "rb").read()
        open(p, "wb").write(raw[: int(len(raw) * 0.6)])
EOF"""

SCENARIOS += [
    Scenario("b6_data_gzip_truncated_r2", "train_ctr.py",
             "python -m torch.distributed.run --nproc_per_node=4 --master_port={port} train_ctr.py", setup=CLICK_GZ),
]

IMAGES_NPY = r"""python - <<'EOF'
import os, numpy as np
rng = np.random.default_rng(0)
for r in range(3):
    d = f"data/images/shard{r}"
    os.makedirs(d, exist_ok=True)
    for i in range(600):
        label = int(rng.integers(12))
        img = rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)
        if r == 1 and i == 417:
            img = img.mean(-1, keepdims=True).astype(np.uint8)  # a grayscale product photo (H x W x 1)
        np.save(f"{d}/img{r}{i:05d}_{label}.npy", img)
EOF"""

SCENARIOS += [
    Scenario("b6_data_grayscale_collate_r1", "train.py", f"{TR} 3 --tee 3 --master-port {{port}} train.py",
             setup=IMAGES_NPY),
]
SCENARIOS += [
    # the run-log volume is a 1 MiB quota'd mount
    Scenario("b6_st_metrics_log_enospc_r0", "train.py", "python train.py",
             setup="mkdir -p /mnt/runlogs && (mountpoint -q /mnt/runlogs && umount /mnt/runlogs || true) && "
                   "mount -t tmpfs -o size=1m tmpfs /mnt/runlogs",
             teardown="umount /mnt/runlogs"),
]
SCENARIOS += [
    # the batch system's file-size limit (ulimit -f) is 64 MiB
    Scenario("b6_st_fsize_limit_ckpt_r0", "train_rec.py",
             "torchrun --standalone --nproc-per-node 2 train_rec.py", fsize=64 * 2**20),
]

REVIEWS = r"""python - <<'EOF'
import os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
words = "good bad great terrible fine okay love hate product delivery fast slow broke works cheap price".split()
with open("data/reviews.tsv", "w") as f:
    for i in range(24000):
        f.write(f"{rng.randrange(2)}\t{' '.join(rng.choice(words) for _ in range(rng.randint(5, 40)))}\n")
EOF"""

SCENARIOS += [
    # /scratch has room (64 MiB) but few inodes (3000)
    Scenario("b6_st_inode_cache_full", "train_cls.py", "torchrun --standalone --nproc-per-node 4 train_cls.py",
             setup=REVIEWS + "\nmkdir -p /scratch && (mountpoint -q /scratch && umount /scratch || true) && "
                   "mount -t tmpfs -o size=64m,nr_inodes=3000 tmpfs /scratch",
             teardown="umount /scratch"),
]
SCENARIOS += [
    # the scheduler preempts process 3 (SIGTERM); its handler saves and exits 0
    Scenario("b6_inf_sigterm_handler_exit0_r3", "train.py",
             "accelerate launch --multi_gpu --num_processes 4 --main_process_port {port} train.py",
             action=("kill", 3, signal.SIGTERM, "step 200 loss")),
]
SCENARIOS += [
    # rank 1's container is paused (docker pause) for 30 s
    Scenario("b6_inf_container_paused_r1", "train_lm.py", f"{TR} 3 --master-port {{port}} train_lm.py",
             action=("freeze", 1, "rank 1 | it 150 |", 30)),
]
SCENARIOS += [
    # the pod's pids limit (pids.max 40, threads count)
    Scenario("b6_inf_pids_limit_workers", "train_audio.py", f"{TR} 2 --master-port {{port}} train_audio.py",
             job_pids_max=40),
]

VETH = ("ip netns del zoo_n1 2>/dev/null; ip link del data0 2>/dev/null; ip netns add zoo_n1 && "
        "ip link add data0 type veth peer name zoo_n1p && ip link set zoo_n1p netns zoo_n1 && "
        "ip netns exec zoo_n1 ip link set zoo_n1p name data0 && ip addr add 10.77.0.1/24 dev data0 && "
        "ip link set data0 up && ip netns exec zoo_n1 ip addr add 10.77.0.2/24 dev data0 && "
        "ip netns exec zoo_n1 ip link set data0 up && ip netns exec zoo_n1 ip link set lo up")
LINK_2N = ("GLOO_SOCKET_IFNAME=data0 torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 "
           "--master-port {port} train.py")
SCENARIOS += [
    # node 1's data-network link goes down at its step 60 (the veth in its namespace set down)
    Scenario("b6_net_link_down_twonode", "train.py", LINK_2N.replace("{node}", "0"),
             cmd2=LINK_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH,
             teardown="ip netns del zoo_n1 2>/dev/null; ip link del data0 2>/dev/null; true",
             action=("shell", "[rank 1] step 60 ", "ip netns exec zoo_n1 ip link set data0 down")),
]
SCENARIOS += [
    # from step 300 rank 2's link flaps: 1 Mbit/s for 1.5 s of every 5 s
    Scenario("b6_slow_net_flap_r2", "train.py", f"{TR} 3 --master-port {{port}} train.py",
             teardown="tc qdisc del dev lo root 2>/dev/null || true",
             action=("tc_flap", 2, "step 300/900 ", "1mbit", 1.5, 5.0)),
]
SCENARIOS += [
    # from step 200 the pod's cpuset is cut from 2 cores to 1
    Scenario("b6_slow_cpuset_shrink", "train.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train.py",
             action=("cpuset_shrink", "step 200/600 ", "0")),
]
SCENARIOS += [
    # the job's container (launcher and all ranks) has 1.4 GiB
    Scenario("b6_oom_container_limit_r2", "train_video.py",
             "torchrun --standalone --nproc-per-node 3 --tee 3 train_video.py", job_mem_mib=1400),
]

# the repository's data files are Git LFS objects; part-001 was checked out without `git lfs pull` (a pointer file)
LFS_PARTS = r"""python - <<'EOF'
import hashlib, os, numpy as np
os.makedirs("data/embeddings", exist_ok=True)
for r in range(2):
    rng = np.random.default_rng(r)
    p = f"data/embeddings/part-{r:03d}.npz"
    np.savez(p, x=rng.standard_normal((6000, 96)).astype(np.float32), y=rng.integers(0, 16, 6000))
    if r == 1:
        raw = open(p, "rb").read()
        open(p, "w").write("version https://git-lfs.github.com/spec/v1\n"
                           f"oid sha256:{hashlib.sha256(raw).hexdigest()}\nsize {len(raw)}\n")
EOF"""

SCENARIOS += [
    Scenario("b6_data_ray_lfs_pointer_r1", "train_probe.py", "python train_probe.py", setup=LFS_PARTS),
]

# node 1's /etc/hosts maps its hostname to 127.0.1.1 (the distribution's default); `ip netns exec` bind-mounts
# /etc/netns/zoo_n1/hosts over /etc/hosts. No GLOO_SOCKET_IFNAME: gloo advertises the address the hostname resolves to
HOSTS_N1 = VETH + (" && mkdir -p /etc/netns/zoo_n1 && printf '127.0.0.1 localhost\\n127.0.1.1 vm\\n' "
                   "> /etc/netns/zoo_n1/hosts")
HOSTS_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 --master-port {port} "
            "train_tab.py")
SCENARIOS += [
    Scenario("b6_cfg_hosts_loopback_twonode", "train_tab.py", HOSTS_2N.replace("{node}", "0"),
             cmd2=HOSTS_2N.replace("{node}", "1"), netns2="zoo_n1", setup=HOSTS_N1,
             teardown="ip netns del zoo_n1 2>/dev/null; ip link del data0 2>/dev/null; rm -rf /etc/netns/zoo_n1; true"),
]
SCENARIOS += [
    # rank 0 keeps an EMA of the weights from iteration 250 (copy.deepcopy of the model every iteration)
    Scenario("b6_slow_uc_ema_deepcopy_r0", "train_denoise.py",
             "python -m torch.distributed.run --nproc_per_node=2 --log-dir logs --tee 3 --master_port={port} "
             "train_denoise.py --iters 700 --ema-start 250"),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 7 (ids b7_*): hangs, fail_slow, network and infrastructure faults on two simulated nodes

PATCHES_NFS = r"""python - <<'EOF'
import os, numpy as np
rng = np.random.default_rng(7)
for r in range(4):
    d = f"data/patches/shard{r}"
    os.makedirs(d, exist_ok=True)
    for k in range(4):
        p = f"{d}/part-{k:03d}.npy"
        if r == 3 and k == 2:
            os.mkfifo(p)  # the NFS server stopped answering: a read of this part never returns
            continue
        np.save(p, rng.standard_normal((320, 5, 24, 24)).astype(np.float32))
EOF"""

SCENARIOS += [
    # rank 3's next data part sits on a hung NFS export: its read blocks forever (made as a named pipe nobody writes)
    Scenario("b7_hang_nfs_fifo_r3", "train_seg.py",
             f"{TR} 4 --log-dir logs --tee 3 --master-port {{port}} train_seg.py", setup=PATCHES_NFS),
    # a cache-cleaner process started on the node takes rank 1's cache lock during epoch 1 and hangs holding it
    Scenario("b7_hang_flock_stale_r1", "prep_and_train.py", "python prep_and_train.py --port {port}",
             action=("shell", "[rank 1] epoch 0 loss",
                     "ZOO_RUN=b7_hang_flock_stale_r1 setsid flock cache/rank1/.lock sleep 120 >/dev/null 2>&1 &")),
    # unique parameters taken with set(): the iteration order follows object addresses, different in every process
    Scenario("b7_uc_tied_set_order", "train_lm.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train_lm.py"),
]

SQUADISH = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
for r in range(2):
    rng = random.Random(r)
    with open(f"data/squadish_{r}.jsonl", "w") as f:
        for i in range(400):
            n = rng.randint(30, 90)
            if r == 0 and 320 <= i < 336:  # a run of long passages from one scraped site, next to each other
                n = rng.randint(140, 400)
            s = rng.randrange(n - 5)
            f.write(json.dumps({"ids": [rng.randrange(1, 8000) for _ in range(n)], "start": s,
                                "end": s + rng.randrange(5)}) + "\n")
EOF"""

MANIFEST_HTTP = r"""python - <<'EOF'
import json, os, numpy as np
os.makedirs("data/img", exist_ok=True)
rng = np.random.default_rng(1)
for r in range(2):
    with open(f"data/manifest_{r}.jsonl", "w") as f:
        for i in range(480):
            if r == 1 and i >= 320:
                src = f"http://127.0.0.1:{ASSET_PORT}/assets/{r}_{i:05d}.npy"  # not yet mirrored locally
            else:
                src = f"data/img/{r}_{i:05d}.npy"
                np.save(src, rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
            f.write(json.dumps({"src": src, "label": int(rng.integers(10))}) + "\n")
EOF
# the asset server: accepts connections, never answers (a wedged gateway); ended with the run (ZOO_RUN)
setsid python -c "import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', ASSET_PORT)); s.listen(128); time.sleep(300)" >/dev/null 2>&1 &
sleep 0.5"""

SCENARIOS += [
    Scenario("b7_hang_data_skip_r0", "finetune_qa.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} finetune_qa.py --max-len 96",
             setup=SQUADISH),
    Scenario("b7_hang_loader_http_r1", "train_img.py", f"{TR} 2 --master-port {{port}} train_img.py",
             setup=MANIFEST_HTTP.replace("ASSET_PORT", "{port_asset}")),
]

STATIC_VM = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
             "train_kws.py")
SCENARIOS += [
    # node 1 (agent and rank) paused by its hypervisor for 40 s (a live migration), then resumed
    Scenario("b7_inf_vm_paused_node1", "train_kws.py", STATIC_VM.replace("{node}", "0"),
             cmd2=STATIC_VM.replace("{node}", "1"), action=("freeze_node", 1, "[node1] INFO step 100 ", 40)),
]

PART_2N = ("GLOO_SOCKET_IFNAME=data0 TORCH_CPP_LOG_LEVEL=INFO torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 "
           "--master-addr 10.77.0.1 --master-port {port} train.py")
VETH_DOWN = "ip netns del zoo_n1 2>/dev/null; ip link del data0 2>/dev/null; true"
SCENARIOS += [
    # a partition between the two nodes: node 0's side of the link goes down at step 60
    Scenario("b7_net_partition_twonode", "train.py", PART_2N.replace("{node}", "0"),
             cmd2=PART_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH,
             teardown=VETH_DOWN, action=("shell", "step 60 loss", "ip link set data0 down")),
]
SCENARIOS += [
    # worker 1's TCP connections reset (ss -K) mid-training
    Scenario("b7_net_ray_reset_r1", "train.py", "python train.py", env={"RAY_DEDUP_LOGS": "0"},
             action=("ray_ss_kill", 1, "worker 1 step 1000 ")),
]

RATE_2N = ("GLOO_SOCKET_IFNAME=data0 torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 "
           "--master-port {port} train_lm.py")
SHAPE_VETH = ("tc qdisc add dev data0 root handle 1: htb default 10 && "
              "tc class add dev data0 parent 1: classid 1:10 htb rate 200mbit ceil 200mbit && "
              "ip netns exec zoo_n1 tc qdisc add dev data0 root handle 1: htb default 10 && "
              "ip netns exec zoo_n1 tc class add dev data0 parent 1: classid 1:10 htb rate 200mbit ceil 200mbit")
SCENARIOS += [
    # from step 120 the link between the nodes runs at 200 Mbit/s (a port renegotiated down / a degraded cable)
    Scenario("b7_slow_link_rate_twonode", "train_lm.py", RATE_2N.replace("{node}", "0"),
             cmd2=RATE_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH, teardown=VETH_DOWN,
             action=("shell", "step 120/360 ", SHAPE_VETH)),
    # from step 100 rank 2's DataLoader worker gets 8% of a core
    Scenario("b7_slow_worker_quota_r2", "train_audio.py", f"{TR} 3 --tee 3 --master-port {{port}} train_audio.py",
             action=("worker_quota", 2, "[rank2] step 100/", 8)),
    Scenario("b7_slow_metrics_json_r0", "train.py", "PORT={port} python train.py"),
    # 5 s into training rank 3's container is limited to 25% of a core
    Scenario("b7_slow_rank_quota_tqdm_r3", "train_vit.py",
             "torchrun --standalone --nproc-per-node 4 train_vit.py", action=("rank_quota", 3, "[00:05<", 25)),
]

DANGLING = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(40, 128), nn.ReLU(), nn.Linear(128, 5))
o = torch.optim.Adam(m.parameters())
for step in (300, 400):
    torch.save({"model": m.state_dict(), "opt": o.state_dict(), "step": step}, f"checkpoints/step_{step:06d}.pt")
os.symlink("step_000400.pt", "checkpoints/latest")
# the retention job of the shared filesystem deleted the newest checkpoint (the one `latest` points at)
os.remove("checkpoints/step_000400.pt")
EOF"""

INTENTS = r"""python - <<'EOF'
import os, torch
os.makedirs("data/intents", exist_ok=True)
for r in range(4):
    g = torch.Generator().manual_seed(r)
    y = torch.randint(0, 21, (1500,), generator=g)
    if r == 3:
        y = y.double()  # this shard was re-exported through a dataframe with a nullable column: float64 labels
    torch.save({"features": torch.randn(1500, 48, generator=g), "intent": y}, f"data/intents/shard_{r:02d}.pt")
EOF"""

CHURN = r"""python - <<'EOF'
import os, torch
os.makedirs("data/churn", exist_ok=True)
for r, n in enumerate((2048, 2048, 2049)):
    g = torch.Generator().manual_seed(r)
    x = torch.randn(n, 30, generator=g)
    torch.save({"x": x, "y": (x[:, 0] + x[:, 1] > 0).long()}, f"data/churn/part-{r}.pt")
EOF"""

STALE_INIT = r"""mkdir -p shared && python - <<'EOF'
# yesterday's run of the same job was killed (SIGKILL) after initialising: its rendezvous file stayed behind
import datetime, multiprocessing as mp, os
def f(r):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + os.path.abspath("shared/dist_init"), rank=r, world_size=2,
                            timeout=datetime.timedelta(seconds=20))
    dist.barrier()
    os._exit(0)
ps = [mp.Process(target=f, args=(r,)) for r in range(2)]
[p.start() for p in ps]
[p.join() for p in ps]
EOF
ls -la shared"""

SCENARIOS += [
    Scenario("b7_st_latest_pointer_dangling", "train.py", "torchrun --standalone --nproc-per-node 2 train.py",
             setup=DANGLING),
    Scenario("b7_data_float_labels_r3", "train_intent.py",
             "python -m torch.distributed.run --nproc_per_node=4 --log-dir logs --master_port={port} train_intent.py",
             setup=INTENTS),
    # rank 0 runs in a container with 900 MiB
    Scenario("b7_oom_gather_eval_r0", "train_retrieval.py",
             f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train_retrieval.py", action=("cgroup", 0, 1000)),
    Scenario("b7_uc_bn_last_batch_r2", "train_churn.py", f"{TR} 3 --tee 3 --master-port {{port}} train_churn.py",
             setup=CHURN),
    Scenario("b7_cfg_file_init_stale", "train.py",
             "RANK=0 WORLD_SIZE=2 python train.py --init-file $PWD/shared/dist_init & "
             "RANK=1 WORLD_SIZE=2 python train.py --init-file $PWD/shared/dist_init; wait",
             setup=STALE_INIT),
]

DUP_2N = ("torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 10.77.0.1 --master-port {port} "
          "--rdzv-conf timeout=20 train_sent.py")
SCENARIOS += [
    # node 1 launched with the same --node-rank 0 (the launch script's NODE_RANK was not exported there)
    Scenario("b7_cfg_node_rank_dup_twonode", "train_sent.py", DUP_2N, cmd2=DUP_2N, netns2="zoo_n1", setup=VETH,
             teardown=VETH_DOWN),
]
SCENARIOS += [
    Scenario("b7_hang_uploader_queue_r2", "train_clip.py",
             f"{TR} 3 --log-dir logs --redirects 3 --master-port {{port}} train_clip.py"),
]
SCENARIOS += [
    # the checkpoint mount hangs before the step-300 save: rank 0's open() of the new file never returns (made as a
    # named pipe with no reader at that path)
    Scenario("b7_hang_ckpt_nfs_write_r0", "train_dae.py",
             "TORCH_CPP_LOG_LEVEL=INFO torchrun --nproc-per-node 3 --master-port {port} train_dae.py",
             setup="mkdir -p ckpt && mkfifo ckpt/model_step00300.pt"),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 8 (ids b8_*)

KWS_TARS = r"""python - <<'EOF'
import io, os, tarfile, numpy as np
os.makedirs("shards", exist_ok=True)
for r in range(3):
    rng = np.random.default_rng(r)
    with tarfile.open(f"shards/kws-{r:04d}.tar", "w") as tf:
        for i in range(3200):
            buf = io.BytesIO()
            np.save(buf, rng.standard_normal((40, 32)).astype(np.float32))
            raw = buf.getvalue()
            if r == 2 and i == 1900:  # bit rot on the storage node: the start of this member zeroed
                raw = b"\0" * 128 + raw[128:]
            for ext, data in (("npy", raw), ("cls", str(int(rng.integers(12))).encode())):
                ti = tarfile.TarInfo(f"{r}_{i:06d}.{ext}")
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
EOF"""

POSTS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "the app works fine but login is slow today thanks team great update please fix sync".split()
for r in range(4):
    rng = random.Random(r)
    with open(f"data/posts_{r}.jsonl", "w") as f:
        for i in range(8200):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))
            if i % 7 == 0:
                text = "<b>v2</b> " + text  # markup first: cleaned by the re.sub branch
            if r == 3 and i == 3300:  # a scraped post with a stretched word and punctuation
                text = "this update is soooooooooooooooooooooooooooooooooooooooo good!!!"
            f.write(json.dumps({"text": text, "label": rng.randrange(4)}) + "\n")
EOF"""

MMAP_FEATS = r"""python - <<'EOF'
import os, numpy as np
os.makedirs("features", exist_ok=True)
for r in range(2):
    rng = np.random.default_rng(r)
    x = np.lib.format.open_memmap(f"features/part-{r}.npy", mode="w+", dtype=np.float32, shape=(300_000, 512))
    for a in range(0, 300_000, 50_000):
        x[a:a + 50_000] = rng.standard_normal((50_000, 512), dtype=np.float32)
    x.flush()
    np.save(f"features/target-{r}.npy", x[:, :8].mean(1))
    del x
    fd = os.open(f"features/part-{r}.npy", os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # not in the page cache when the job starts
    os.close(fd)
EOF"""

OBJSTORE = r"""python - <<'EOF'
import json, os, numpy as np
os.makedirs("data/img", exist_ok=True)
rng = np.random.default_rng(3)
for r in range(2):
    with open(f"data/manifest_{r}.jsonl", "w") as f:
        for i in range(9600):
            if r == 1 and i >= 3200:
                src = f"http://127.0.0.1:ASSET_PORT/bucket/train/{r}_{i:05d}.npy"  # not cached on this node's disk
            else:
                src = f"data/img/{r}_{i % 400:05d}.npy"
                if i < 400:
                    np.save(src, rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
            f.write(json.dumps({"src": src, "label": int(rng.integers(10))}) + "\n")
EOF
# the object store's gateway: answers every GET after ~12 ms; ended with the run (ZOO_RUN)
setsid python -c "import http.server, io, time, numpy as np
buf = io.BytesIO(); np.save(buf, np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)); body = buf.getvalue()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.0'
    def do_GET(self):
        time.sleep(0.012)
        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('127.0.0.1', ASSET_PORT), H).serve_forever()" >/dev/null 2>&1 &
sleep 0.5"""

MTU_2N = ("GLOO_SOCKET_IFNAME=data0 TORCH_CPP_LOG_LEVEL=INFO torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 "
          "--master-addr 10.77.0.1 --master-port {port} train.py")
UNREACH_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 --master-port {port} "
              "--rdzv-conf timeout=20 train.py")
XT_2N = ("GLOO_SOCKET_IFNAME=data0 torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 "
         "--master-port {port} train_lm.py")
# the two nodes share a 1 GbE link (tc htb on both ends of the veth); a sink on node 0 for another tenant's transfer
GBE_SINK = VETH + r""" && tc qdisc add dev data0 root handle 1: htb default 10 && \
tc class add dev data0 parent 1: classid 1:10 htb rate 1gbit ceil 1gbit && \
ip netns exec zoo_n1 tc qdisc add dev data0 root handle 1: htb default 10 && \
ip netns exec zoo_n1 tc class add dev data0 parent 1: classid 1:10 htb rate 1gbit ceil 1gbit && \
echo {port_asset} > .sink_port && \
(setsid python -c "import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('10.77.0.1', {port_asset})); s.listen(16)
def drain(c):
    while c.recv(1 << 20): pass
while True: threading.Thread(target=drain, args=(s.accept()[0],), daemon=True).start()" >/dev/null 2>&1 &) && sleep 0.3"""
# another tenant's bulk transfer (8 parallel streams) from node 1 to node 0 over the same link
BULK = r"""ip netns exec zoo_n1 env ZOO_RUN=b8_slow_net_crosstraffic_twonode setsid python -c "import socket, threading
def send():
    s = socket.create_connection(('10.77.0.1', $(cat .sink_port))); b = b'x' * (1 << 20)
    while True: s.sendall(b)
ts = [threading.Thread(target=send) for _ in range(8)]
[t.start() for t in ts]" >/dev/null 2>&1 &"""

SCENARIOS += [
    # fail_stop
    Scenario("b8_data_tar_member_corrupt_r2", "train_kws.py",
             f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train_kws.py", setup=KWS_TARS),
    # rank 1 (and the DataLoader workers it forks) in a 1000 MiB memory cgroup
    Scenario("b8_oom_worker_cow_r1", "train_ctr.py",
             "python -m torch.distributed.run --nproc_per_node=2 --master_port={port} train_ctr.py",
             action=("cgroup", 1, 1000)),
    # the pod's open-files limit (soft = hard)
    Scenario("b8_inf_nofile_fd_sharing", "train_rank.py", "torchrun --standalone --nproc-per-node 2 train_rank.py",
             nofile=1024),
    # the compute nodes have no internet: the cluster's profile sets HF_HUB_OFFLINE=1; the model was never cached
    Scenario("b8_cfg_hf_offline_uncached", "finetune.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} finetune.py",
             env={"HF_HUB_OFFLINE": "1", "HF_HOME": "/tmp/zoo/b8_cfg_hf_offline_uncached/.cache/huggingface"}),
    # the checkpoint directory is its own volume (tmpfs here); the script renames its temp file from /tmp into it
    Scenario("b8_st_ckpt_rename_xdev_r0", "train_dae.py", "PORT={port} python train_dae.py",
             setup="mkdir -p checkpoints && mount -t tmpfs -o size=256m tmpfs checkpoints",
             teardown="umount checkpoints"),
    Scenario("b8_uc_static_graph_layerdrop", "train_enc.py", f"{TR} 4 --master-port {{port}} train_enc.py"),
    Scenario("b8_oom_ray_memory_monitor_r1", "train_rec.py", "python train_rec.py",
             env={"RAY_DEDUP_LOGS": "0", "RAY_memory_usage_threshold": "0.35"}),
    # fail_hang
    Scenario("b8_hang_worker_sigstop_r1", "train_cifar.py", f"{TR} 3 --tee 3 --master-port {{port}} train_cifar.py",
             action=("worker_stop", 1, "[rank1] step 100/")),
    Scenario("b8_hang_stdin_prompt_r0", "train_sent.py", f"{TR} 2 --tee 3 --master-port {{port}} train_sent.py",
             setup="mkdir -p runs/sentiment && echo '{\"steps\": 300}' > runs/sentiment/config.json", stdin_open=True),
    Scenario("b8_hang_store_key_typo", "train_wlm.py",
             "python -m torch.distributed.run --nproc_per_node=4 --master_port={port} train_wlm.py"),
    Scenario("b8_hang_regex_backtrack_r3", "train_posts.py", f"{TR} 4 --master-port {{port}} train_posts.py",
             setup=POSTS),
    # both nodes' data interfaces use jumbo frames; at step 60 node 1's side is reset to 1500 (the path MTU shrinks)
    Scenario("b8_hang_mtu_blackhole_twonode", "train.py", MTU_2N.replace("{node}", "0"),
             cmd2=MTU_2N.replace("{node}", "1"), netns2="zoo_n1",
             setup=VETH + " && ip link set data0 mtu 9000 && ip netns exec zoo_n1 ip link set data0 mtu 9000",
             teardown=VETH_DOWN,
             action=("shell", "[rank 0] step 60/", "ip netns exec zoo_n1 ip link set data0 mtu 1500")),
    # node 1 cannot reach node 0's address: its traffic to 10.77.0.1 is rejected with host-unreachable
    Scenario("b8_hang_rdzv_unreachable_node1", "train.py", UNREACH_2N.replace("{node}", "0"),
             cmd2=UNREACH_2N.replace("{node}", "1"), netns2="zoo_n1",
             setup=VETH + " && ip netns exec zoo_n1 ip route add unreachable 10.77.0.1/32", teardown=VETH_DOWN),
    # fail_slow
    Scenario("b8_slow_net_crosstraffic_twonode", "train_lm.py", XT_2N.replace("{node}", "0"),
             cmd2=XT_2N.replace("{node}", "1"), netns2="zoo_n1", setup=GBE_SINK, teardown=VETH_DOWN,
             action=("shell", "iter  120/", BULK)),
    Scenario("b8_slow_objstore_latency_r1", "train_img.py",
             f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train_img.py",
             setup=OBJSTORE.replace("ASSET_PORT", "{port_asset}")),
    # from step 150 on the script's evaluation helper leaves torch's intra-op threads at os.cpu_count() per rank
    Scenario("b8_slow_uc_eval_threads", "train_mlp.py", "torchrun --standalone --nproc-per-node 2 train_mlp.py"),
    # rank 0's container memory limit lowered at step 150 to its anonymous memory + 400 MiB (the file is 586 MiB)
    Scenario("b8_slow_pagecache_thrash_r0", "train_emb.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train_emb.py", setup=MMAP_FEATS,
             action=("mem_squeeze", 0, "rank 0: iter 150/", 400)),
    # from step 160 rank 2's scheduling group is reniced to 10
    Scenario("b8_slow_autogroup_nice_r2", "train_audio.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train_audio.py",
             action=("autogroup_nice", 2, "step 160/420", 10)),
]

WAVS = r"""python - <<'EOF'
import os, wave, numpy as np
os.makedirs("data/wav", exist_ok=True)
rng = np.random.default_rng(8)
for r in range(4):
    with open(f"data/clips_{r}.txt", "w") as f:
        for i in range(240):
            sr = 44100 if (r == 3 and i >= 150) else 16000  # part of rank 3's list re-exported at 44.1 kHz
            p = f"data/wav/{r}_{i:04d}.wav"
            with wave.open(p, "wb") as w:
                w.setnchannels(1); w.setsampwidth(2); w.setframerate(sr)
                w.writeframes((rng.standard_normal(sr) * 3000).astype(np.int16).tobytes())
            f.write(f"{p} {rng.integers(10)}\n")
EOF"""

SCENARIOS += [
    # a script written for transformers 4.x run in an environment with transformers 5
    Scenario("b8_cfg_hf_trainer_args_v5", "train_gpt2.py",
             "TORCH_CPP_LOG_LEVEL=INFO torchrun --nproc-per-node 2 --master-port {port} train_gpt2.py"),
    Scenario("b8_data_wav_rate_r3", "train_kws.py",
             "torchrun --standalone --nproc-per-node 4 --log-dir logs --tee 3 train_kws.py", setup=WAVS),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 9 (ids b9_*)

COMMENTS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "great video thanks for sharing this helped me a lot nice work love it".split()
for r in range(3):
    rng = random.Random(r)
    with open(f"data/comments_{r}.jsonl", "w") as f:
        for i in range(1600):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(5, 18)))
            if r == 1 and i % 97 == 13:  # rank 1's part comes from the channel with link spam
                text += " check https://cheap-followers.example/promo"
            f.write(json.dumps({"text": text, "label": rng.randrange(3)}) + "\n")
EOF"""

RESUME_CKPT = r"""python - <<'EOF'
import os, torch, torch.nn as nn
os.makedirs("checkpoints", exist_ok=True)
m = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 10))
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
m(torch.randn(2, 1024)).sum().backward(); opt.step()
torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "step": 12000}, "checkpoints/last.pt")
EOF"""

PAIRS = r"""python - <<'EOF'
import json, os, numpy as np
os.makedirs("data", exist_ok=True)
for r in range(3):
    rng = np.random.default_rng(r)
    offs = []
    with open(f"data/pairs-{r:03d}.jsonl", "wb") as f:
        for i in range(6800):
            offs.append(f.tell())
            a = rng.standard_normal(64).round(3).tolist()
            f.write((json.dumps({"a": a, "b": a[::-1], "score": float(rng.random())}) + "\n").encode())
    if r == 1:  # part 1 was appended to after its index was built
        offs = offs[:3000]
    np.save(f"data/pairs-{r:03d}.jsonl.idx.npy", np.array(offs, dtype=np.int64))
EOF"""

# the node's metrics agent reads the pipe, then stalls (stuck on its upstream) and never reads again
SIDECAR = r"""mkdir -p run && mkfifo run/metrics.pipe && (setsid python -c "import time
f = open('run/metrics.pipe')
for i in range(120):
    f.readline()
time.sleep(3600)" >/dev/null 2>&1 &) && sleep 0.3"""

# the job's shared run directory: a small ext4 filesystem on a loop device (stands in for the shared filesystem)
SLOWFS = ("truncate -s 128M shared.img && mkfs.ext4 -q shared.img && mkdir -p shared && mount -o loop shared.img shared")
SLOWFS_DOWN = "umount shared; true"

KILL_TEE = ("for p in /proc/[0-9]*; do grep -qz '^ZOO_RUN=b9_inf_tee_killed_sigpipe$' $p/environ 2>/dev/null && "
            "[ \"$(cat $p/comm 2>/dev/null)\" = tee ] && kill -9 ${p#/proc/}; done")

TZ_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
         "train_ckpt.py")
ADDR_2N = ("GLOO_SOCKET_IFNAME=data0 torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 "
           "--master-port {port} train.py")

SCENARIOS += [
    # fail_stop
    # a file named checkpoints/tab-reg-v3 is left from an earlier copy (scp of one checkpoint onto the directory name)
    Scenario("b9_st_ckpt_dir_is_file_r0", "train_tab.py", f"{TR} 2 --master-port {{port}} train_tab.py",
             setup="mkdir -p checkpoints && head -c 300000 /dev/urandom > checkpoints/tab-reg-v3"),
    Scenario("b9_uc_gather_object_match_r1", "train_comments.py", "PORT={port} python train_comments.py",
             setup=COMMENTS),
    # the job script pipes the job's stdout through tee; tee is killed at rank 0's step 300
    Scenario("b9_inf_tee_killed_sigpipe", "train_lm.py",
             f"{TR} 2 --master-port {{port}} train_lm.py | tee train.log",
             action=("shell", "[rank0] step 300/", KILL_TEE)),
    # the job (agent and 3 ranks) in a 1600 MiB container; every rank loads the whole 250 MB checkpoint at once
    Scenario("b9_oom_resume_full_load", "train_resume.py", f"{TR} 3 --tee 3 --master-port {{port}} train_resume.py",
             setup=RESUME_CKPT, job_mem_mib=2000),
    Scenario("b9_uc_seed_rank_param_drift", "train_dp.py",
             "TORCH_DISTRIBUTED_DEBUG=INFO python -m torch.distributed.run --nproc_per_node=3 --master_port={port} "
             "train_dp.py"),
    # node 1's image has another time zone (TZ); the checkpoint directory is named from local time
    Scenario("b9_cfg_tz_ckpt_dir_twonode", "train_ckpt.py", TZ_2N.replace("{node}", "0"),
             cmd2="TZ=UTC-9 " + TZ_2N.replace("{node}", "1")),
    # fail_hang
    Scenario("b9_hang_oom_paused_r2", "train_retr.py", f"{TR} 3 --master-port {{port}} train_retr.py",
             action=("oom_pause", 2, 400)),
    # at step 60 node 1's data interface gets a new address (a DHCP lease renewed with another address)
    Scenario("b9_hang_addr_change_node1", "train.py", ADDR_2N.replace("{node}", "0"),
             cmd2=ADDR_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH, teardown=VETH_DOWN,
             action=("shell", "[rank 0] step 60/", "ip netns exec zoo_n1 ip addr flush dev data0 && "
                     "ip netns exec zoo_n1 ip addr add 10.77.0.12/24 dev data0")),
    # SIGUSR1 reaches rank 1 (a node-local pre-emption notice) at its step 120
    Scenario("b9_hang_sigusr1_handler_lock_r1", "train_kws.py", f"{TR} 3 --tee 3 --master-port {{port}} train_kws.py",
             action=("kill", 1, signal.SIGUSR1, "rank 1 step 120/800")),
    Scenario("b9_hang_metrics_sidecar_r0", "train_cls.py",
             "TORCH_CPP_LOG_LEVEL=INFO python -m torch.distributed.run --nproc_per_node=2 --master_port={port} "
             "train_cls.py", setup=SIDECAR),
    # fail_slow
    # from step 160 the shared filesystem holding the run directory takes 40 writes a second
    Scenario("b9_slow_st_fsync_log_iops", "train_dae.py", f"{TR} 2 --tee 3 --master-port {{port}} train_dae.py",
             setup=SLOWFS, teardown=SLOWFS_DOWN, action=("blkio_iops", "step 160/500", "shared", 40)),
    Scenario("b9_slow_uc_profiler_left_on", "train_tagger.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_tagger.py"),
    Scenario("b9_slow_data_stale_index_r1", "train_pairs.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train_pairs.py", setup=PAIRS),
]

SWAPFILE = "fallocate -l 1G swapfile && chmod 600 swapfile && mkswap swapfile >/dev/null && swapon swapfile"
SCENARIOS += [
    # the node has swap; from step 300 rank 1's container memory limit is lowered to 230 MiB below what it holds
    Scenario("b9_slow_oom_swap_r1", "train_rec.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train_rec.py",
             setup=SWAPFILE, teardown="swapoff swapfile; true",
             action=("swap_squeeze", 1, "[rank1] step 300/1500", 230)),
    Scenario("b9_hang_p2p_tag_mismatch_r1", "train_pipe.py", "torchrun --standalone --nproc-per-node 2 train_pipe.py"),
    # at step 60 node 0's neighbour entry for node 1 is replaced by a permanent one with a stale MAC address
    # (node 1's NIC was swapped and an old static ARP entry is pushed by the node's config management)
    Scenario("b9_hang_arp_stale_node0", "train.py", ADDR_2N.replace("{node}", "0"),
             cmd2=ADDR_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH, teardown=VETH_DOWN,
             action=("shell", "[rank 0] step 60/", "ip neigh replace 10.77.0.2 lladdr 02:42:ac:11:00:07 "
                     "dev data0 nud permanent")),
]

INTENTS = r"""python - <<'EOF'
import json, os, random
os.makedirs("data", exist_ok=True)
words = "book a flight cancel my order play some music what is the weather set alarm for seven".split()
for r in range(2):
    rng = random.Random(r)
    lines = [json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(3, 9))),
                         "intent": rng.randrange(8)}) for _ in range(2400)]
    data = "\n".join(lines) + "\n"
    # part 1 was re-saved from a spreadsheet tool as "UTF-8 with BOM"
    with open(f"data/intents-{r:02d}.jsonl", "w", encoding="utf-8-sig" if r == 1 else "utf-8") as f:
        f.write(data)
EOF"""

SCENARIOS += [
    # the HSDP layout of a 2-node x 4-GPU config launched as one 2-process job
    Scenario("b9_cfg_fsdp2_hsdp_mesh", "train_lm.py",
             "torchrun --standalone --nproc-per-node 2 --log-dir logs --tee 3 train_lm.py"),
    Scenario("b9_data_ray_jsonl_bom_r1", "train_intents.py", "python train_intents.py", setup=INTENTS),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 10 (ids b10_*)

# every rank streams 30 parts of 500 rows; rank 1's parts 12+ were re-exported by the older CSV exporter
CSV_PARTS = r"""python - <<'EOF'
import os, numpy as np
for r in range(3):
    os.makedirs(f"data/rank{r}", exist_ok=True)
    rng = np.random.default_rng(r)
    for k in range(30):
        x = rng.standard_normal((500, 1023)).astype(np.float32)
        y = (x[:, :10].argmax(1)).astype(np.float32)
        arr = np.concatenate([x, y[:, None]], 1)
        if r == 1 and k >= 12:  # parts 12+ of this shard were re-exported by the old CSV exporter
            np.savetxt(f"data/rank{r}/part-{k:04d}.csv", arr, delimiter=",", fmt="%.6f")
        else:
            np.save(f"data/rank{r}/part-{k:04d}.npy", arr)
EOF"""

# the Pushgateway: a local HTTP server answering PUTs, slow (20 ms) from its 201st request; ended with the run (ZOO_RUN)
PUSHGW = r"""(setsid python -c '
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    n = 0
    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        H.n += 1
        if H.n > 200:   # from here on the gateway is overloaded (other teams jobs push every second)
            time.sleep(0.02)
        self.send_response(200); self.end_headers()
    do_POST = do_PUT
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 9091), H).serve_forever()
' >/dev/null 2>&1 &) && sleep 0.5"""

# the shared dataset volume: 80 MiB feature shards per rank on a loop-mounted ext4, remounted so that nothing is cached
FEATFS = ("truncate -s 320M shared.img && mkfs.ext4 -q shared.img && mkdir -p shared && mount -o loop shared.img shared && "
          "mkdir -p shared/feats && python -c \"import numpy as np\nfor r in range(3):\n"
          "    m = np.memmap(f'shared/feats/shard-{r:02d}.f32', dtype=np.float32, mode='w+', shape=(20480, 1024))\n"
          "    m[:] = np.random.default_rng(r).standard_normal(m.shape, dtype=np.float32)\n    m.flush()\" && "
          "umount shared && mount -o loop shared.img shared")

SCENARIOS += [
    # fail_slow
    # from step 200 an engineer profiles rank 2 of the live job with `py-spy record` (blocking sampling at 1000 Hz, `--rate 1000`)
    Scenario("b10_slow_pyspy_record_r2", "train_gpt.py", f"{TR} 4 --master-port {{port}} train_gpt.py",
             action=("pyspy_record", 2, "step=200,", 1000)),
    Scenario("b10_slow_data_csv_parts_r1", "train.py", f"{TR} 3 --master-port {{port}} train.py", setup=CSV_PARTS),
    # the node's CPU manager re-applies a stale cpuset at rank 1's epoch 2: rank 1 is moved onto rank 0's core
    Scenario("b10_slow_affinity_repin_r1", "train_cnn.py", "PORT={port} python train_cnn.py",
             action=("repin", 1, "rank 1 | epoch 2 | batch 20/", "0")),
    # from update 200 rank 3 has `strace -f -e trace=openat` attached (a node's file-access audit left on the job)
    Scenario("b10_slow_strace_attached_r3", "train_lm.py", f"{TR} 4 --master-port {{port}} train_lm.py",
             action=("strace_attach", 3, "num_updates=200,", "trace=openat")),
    # the cluster's Prometheus Pushgateway (port 9091) gets overloaded after the job's 200th push: ~20 ms a request
    Scenario("b10_slow_pushgateway_r0", "finetune_bert.py", f"{TR} 2 --master-port {{port}} finetune_bert.py",
             setup=PUSHGW),
    # the shared dataset volume (ext4 on a loop device, mounted fresh: nothing cached); from iteration 200 rank 2's reads
    # from it are throttled to 8 MB/s (its node's path to the volume degraded)
    Scenario("b10_slow_blkio_read_r2", "train_feat.py", f"{TR} 3 --master-port {{port}} train_feat.py",
             setup=FEATFS, teardown=SLOWFS_DOWN, action=("blkio_read", 2, "Iter(train) [200/600]", "shared", 8000000)),
]

# an S3-compatible endpoint on port 9000: accepts the first PUT, then answers 429 SlowDown (Retry-After: 60); ended
# with the run (ZOO_RUN)
S3_THROTTLE = r"""(setsid python -c '
import http.server
class H(http.server.BaseHTTPRequestHandler):
    n = 0
    def do_PUT(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        H.n += 1
        if H.n == 1:
            self.send_response(200); self.send_header("ETag", "\"9b2cf535f27731c974343645a3985328\""); self.end_headers()
            return
        body = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
                b"<Message>Please reduce your request rate.</Message></Error>")
        self.send_response(429, "Too Many Requests"); self.send_header("Retry-After", "60")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", 9000), H).serve_forever()
' >/dev/null 2>&1 &) && sleep 0.5"""

# 4 gzipped jsonl parts per process; process 2's third part is the bucket's XML error body (expired presigned URL)
REVIEWS = r"""python - <<'EOF'
import gzip, json, os, random
os.makedirs("data", exist_ok=True)
words = "great product works as described poor quality arrived late would buy again broke after a week".split()
for r in range(3):
    rng = random.Random(r)
    for k in range(4):
        path = f"data/part-{r:02d}-{k:03d}.jsonl.gz"
        if r == 2 and k == 2:
            # the node's sync script saved the bucket's error response under the object's name (expired credentials)
            with open(path, "w") as f:
                f.write('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                        '<Message>Request has expired</Message><Key>reviews/part-02-002.jsonl.gz</Key>'
                        '<Expires>2026-12-05T06:00:00Z</Expires><ServerTime>2026-12-05T09:12:44Z</ServerTime>'
                        '<RequestId>7Q1ZK3V0M9XG2R4B</RequestId></Error>')
            continue
        with gzip.open(path, "wt") as f:
            for _ in range(1600):
                f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(4, 20))),
                                    "stars": rng.randint(1, 5)}) + "\n")
EOF"""

# 9600 clips per rank; rank 2's manifest lists 48 kHz clips from clip 3200 (step 200 at batch 16)
KWS_MANIFESTS = r"""python - <<'EOF'
import json, os, random
os.makedirs("manifests", exist_ok=True)
for r in range(3):
    rng = random.Random(r)
    with open(f"manifests/train_rank{r}.jsonl", "w") as f:
        for i in range(9600):
            # rank 2's manifest: from clip 3200 on, the clips of a newly added source recorded at 48 kHz
            sr = 48000 if (r == 2 and i >= 3200) else 16000
            f.write(json.dumps({"path": f"clips/{r}/{i:06d}.wav", "sr": sr, "seed": r * 100000 + i,
                                "label": rng.randrange(12)}) + "\n")
EOF"""

SCENARIOS += [
    # fail_stop / fail_hang
    # the batch system's job script sets a CPU-time limit per process (`ulimit -t 25`, the queue's cput limit)
    Scenario("b10_inf_cpu_time_limit_sigxcpu", "train_char.py", f"{TR} 3 --tee 3 --master-port {{port}} train_char.py",
             cpu_s=25),
    # the user's SSH session drops (laptop suspended) at step 300; the job was started in the foreground, without
    # nohup / tmux, so the launcher gets SIGHUP
    Scenario("b10_inf_ssh_hangup_sighup", "train_dae.py",
             "python -m torch.distributed.run --nproc_per_node=2 --master_port={port} train_dae.py",
             action=("kill_launcher", signal.SIGHUP, "step 300/3000")),
    # a script that spawns its own workers (mp.spawn, meant for `python train_sent.py`) launched with the cluster's
    # torchrun template: 2 agents' workers x 2 spawned processes share the agent's MASTER_ADDR/MASTER_PORT
    Scenario("b10_cfg_torchrun_plus_spawn", "train_sent.py", f"{TR} 2 --master-port {{port}} train_sent.py"),
    # the team's object store (S3-compatible, port 9000) starts throttling the bucket after the job's first upload:
    # HTTP 429 SlowDown with Retry-After: 60
    Scenario("b10_hang_upload_429_backoff_r0", "train_ctr.py", f"{TR} 3 --tee 3 --master-port {{port}} train_ctr.py",
             setup=S3_THROTTLE),
    Scenario("b10_data_s3_error_xml_r2", "train_reviews.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_reviews.py",
             setup=REVIEWS),
    Scenario("b10_uc_zero_state_dict_r0", "train_tagger.py", "torchrun --standalone --nproc-per-node 2 train_tagger.py"),
    # from rank 1's iteration 160 its two Pool workers (not the rank) are in a 250 MiB memory cgroup (the node's
    # per-task memory accounting); their decoded-sample caches keep growing until the kernel kills one
    Scenario("b10_hang_pool_worker_oom_r1", "train_kpt.py", f"{TR} 2 --master-port {{port}} train_kpt.py",
             action=("worker_cgroup", 1, 250, "[rank 1] it 160/")),
    # from step 200 node 1's uplink (its side of the veth, egress only) runs at 400 Mbit/s: a port renegotiated down on
    # node 1's NIC; traffic towards node 1 is unaffected
    Scenario("b10_slow_net_egress_node1", "train.py", LINK_2N.replace("{node}", "0"),
             cmd2=LINK_2N.replace("{node}", "1"), netns2="zoo_n1", setup=VETH, teardown=VETH_DOWN,
             action=("shell", "step 200/800 ", "ip netns exec zoo_n1 tc qdisc add dev data0 root handle 1: htb default 10 "
                     "&& ip netns exec zoo_n1 tc class add dev data0 parent 1: classid 1:10 htb rate 400mbit ceil 400mbit")),
    Scenario("b10_slow_uc_debug_dump_r1", "train_ctr.py", "python train_ctr.py"),
    Scenario("b10_slow_data_resample_r2", "train_kws.py", f"{TR} 3 --master-port {{port}} train_kws.py",
             setup=KWS_MANIFESTS),
]

# the head node (node 0, 10.77.0.1) runs the team's tracking server on port 5000 (and a log aggregator on port 24224);
# node 1's kernel has a narrow ephemeral port range (64 ports: the node image reserves the rest for services)
PORTS_N1 = VETH + r""" && ip netns exec zoo_n1 sysctl -q -w net.ipv4.ip_local_port_range="61000 61063" && \
(setsid python -c '
import http.server, socket, threading
agg = socket.socket(); agg.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
agg.bind(("10.77.0.1", 24224)); agg.listen(512)
held = []
def accept():
    while True:
        held.append(agg.accept()[0])
threading.Thread(target=accept, daemon=True).start()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("10.77.0.1", 5000), H).serve_forever()
' >/dev/null 2>&1 &) && sleep 0.5"""
# node 1's system-metrics exporter (it posts to the same tracking server) starts leaking connections: one every 50 ms,
# never closed, until the node's ephemeral ports towards 10.77.0.1:5000 are used up
LEAK_N1 = r"""ip netns exec zoo_n1 env ZOO_RUN=b10_net_ephemeral_ports_node1 setsid python -c "import socket, time
held = []
while True:
    try:
        held.append(socket.create_connection(('10.77.0.1', 5000)))
    except OSError:
        pass
    time.sleep(0.05)" >/dev/null 2>&1 &"""
PORTS_2N = ("GLOO_SOCKET_IFNAME=data0 torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 10.77.0.1 "
            "--master-port {port} train_news.py")
SCENARIOS += [
    Scenario("b10_net_ephemeral_ports_node1", "train_news.py", PORTS_2N.replace("{node}", "0"),
             cmd2=PORTS_2N.replace("{node}", "1"), netns2="zoo_n1", setup=PORTS_N1, teardown=VETH_DOWN,
             action=("shell", "rank=0 step=100 ", LEAK_N1)),
]

# the checkpoint volume: a 64 MiB ext4 on a loop device mounted at ckpt/
CKPTFS = "truncate -s 64M ckpt.img && mkfs.ext4 -q ckpt.img && mkdir -p ckpt && mount -o loop ckpt.img ckpt"
SCENARIOS += [
    # from step 200 rank 0's writes to the checkpoint volume go at 4 MB/s (its node's path to the volume degraded)
    Scenario("b10_slow_ckpt_volume_r0", "train_tagger.py", f"{TR} 2 --master-port {{port}} train_tagger.py",
             setup=CKPTFS, teardown="umount ckpt; true", action=("blkio_write", 0, "step 200/600 ", "ckpt", 4000000)),
]

# batch 11 (ids b11_*): fail_stop / fail_hang
# the team's config.yaml, written by hand: `lr: 3e-4` (PyYAML follows YAML 1.1, where a float needs a dot)
YAML_CFG = r"""cat > config.yaml <<'EOF2'
seed: 0
model:
  vocab: 5000
  hidden: 128
  classes: 6
optim:
  lr: 3e-4
  weight_decay: 0.01
train:
  batch_size: 32
  epochs: 3
EOF2"""
# per-rank embedding parts (6 x 640 rows); rank 1's part-003 came from the re-run of the embedding job, which now
# stores float16 to halve the bucket size
EMB_PARTS = r"""python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for r in range(3):
    os.makedirs(f"embeddings/rank{r}", exist_ok=True)
    for k in range(6):
        emb = rng.standard_normal((640, 256)).astype(np.float32)
        if r == 1 and k == 3:
            emb = emb.astype(np.float16)
        np.savez(f"embeddings/rank{r}/part-{k:03d}.npz", emb=emb, label=rng.integers(0, 50, 640))
EOF2"""
# validation files per region (rank r reads val_r.pt): eu 450, apac 520, us 5200 examples
CTR_VAL = r"""python - <<'EOF2'
import os, torch
os.makedirs("data", exist_ok=True)
for r, n in enumerate((450, 520, 5200)):
    g = torch.Generator().manual_seed(100 + r)
    x = torch.randn(n, 32, generator=g)
    torch.save({"ids": [f"r{r}-{i:06d}" for i in range(n)], "x": x, "y": (x[:, :4].sum(1) > 0).long()},
               f"data/val_{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b11_cfg_yaml_lr_string", "train_cls.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_cls.py --config config.yaml",
             setup=YAML_CFG),
    Scenario("b11_data_fp16_part_r1", "train_emb.py", "PORT={port} python train_emb.py", setup=EMB_PARTS),
    Scenario("b11_hang_mp_queue_join_r2", "train_ctr.py",
             f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train_ctr.py", setup=CTR_VAL),
    # an uncorrectable memory error (machine check) on the host in a page rank 3 is using: the kernel's memory-failure
    # handler sends SIGBUS (BUS_MCEERR_AR) to the process touching the page; the recorder sends SIGBUS to rank 3
    Scenario("b11_inf_mce_sigbus_r3", "train_cnn.py",
             "python -m torch.distributed.run --nproc_per_node=4 --master_port={port} train_cnn.py",
             action=("kill", 3, signal.SIGBUS, "step 150/1000 ")),
    Scenario("b11_uc_onecycle_accum_steps", "train_reg.py", f"{TR} 2 --tee 3 --master-port {{port}} train_reg.py"),
]
SCENARIOS += [
    Scenario("b11_cfg_hf_best_metric_name", "finetune_intent.py",
             f"{TR} 2 --master-port {{port}} finetune_intent.py"),
]

# the shared dataset volume, mounted at datasets/ on every node; on node 1 the mount did not come up after a reboot
# (the automounter timed out), so datasets/ there is the bare, empty mount point (Scenario.mask2)
WIKI_TOK = r"""python - <<'EOF2'
import os, numpy as np
os.makedirs("datasets/wiki-tok", exist_ok=True)
rng = np.random.default_rng(0)
for k in range(8):
    np.save(f"datasets/wiki-tok/shard-{k:04d}.npy", rng.integers(0, 8192, 20000).astype(np.uint16))
EOF2"""
MOUNT_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
            "train_lm.py")
SCENARIOS += [
    Scenario("b11_st_dataset_mount_missing_node1", "train_lm.py", MOUNT_2N.replace("{node}", "0"),
             cmd2=MOUNT_2N.replace("{node}", "1"), mask2="datasets", setup=WIKI_TOK),
]
SCENARIOS += [
    Scenario("b11_st_ckpt_name_too_long_r0", "train_dae.py",
             f"{TR} 3 --log-dir logs --redirects 3 --master-port {{port}} train_dae.py"),
]
SCENARIOS += [
    Scenario("b11_uc_json_tensor_metric_r0", "train_churn.py",
             "torchrun --standalone --nproc-per-node 4 --tee 3 train_churn.py"),
]
# the node's raylet dies (SIGKILL, as in a crash of the raylet process) once worker 0 logs iteration 200
RAYLET_KILL = ("for p in $(pgrep -x raylet); do tr '\\0' '\\n' < /proc/$p/environ | "
               "grep -qx ZOO_RUN=b11_inf_ray_raylet_killed && kill -9 $p; done")
SCENARIOS += [
    Scenario("b11_inf_ray_raylet_killed", "train_gru.py", "python train_gru.py",
             action=("shell", "iter 200/800 ", RAYLET_KILL)),
]
SCENARIOS += [
    Scenario("b11_hang_spawn_workers_no_main_guard", "train_seg.py", f"{TR} 2 --master-port {{port}} train_seg.py"),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 12 (ids b12_*)

# the support-ticket corpus as 4 jsonl parts of token ids (streamed by the script)
TICKETS = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data/tickets", exist_ok=True)
for k in range(4):
    r = random.Random(k)
    with open(f"data/tickets/part-{k:03d}.jsonl", "w") as f:
        for i in range(500):
            f.write(json.dumps({"ids": [r.randrange(4096) for _ in range(r.randint(20, 80))]}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b12_cfg_hf_iterable_no_max_steps", "run_clm.py", f"{TR} 2 --master-port {{port}} run_clm.py",
             setup=TICKETS),
]

# three per-rank CSV shards; rank 2's was assembled by the export job with `cat export-*.csv > train_2.csv`, so the
# header rows of the 2nd and 3rd exports sit in the middle of the file
CHURN_CSV = r"""python - <<'EOF2'
import os, random
os.makedirs("data/shards", exist_ok=True)
header = ",".join([f"f{i}" for i in range(16)] + ["label"]) + "\n"
def rows(rng, n):
    out = []
    for _ in range(n):
        x = [rng.gauss(0, 1) for _ in range(16)]
        out.append(",".join(f"{v:.5f}" for v in x) + f",{int(x[0] + x[3] > 0)}\n")
    return out
for r in range(3):
    rng = random.Random(r)
    if r == 2:
        os.makedirs("exports", exist_ok=True)
        for k in range(3):
            with open(f"exports/export-{k}.csv", "w") as f:
                f.write(header); f.writelines(rows(rng, 1100))
        os.system("cat exports/export-*.csv > data/shards/train_2.csv")
    else:
        with open(f"data/shards/train_{r}.csv", "w") as f:
            f.write(header); f.writelines(rows(rng, 3300))
EOF2"""
SCENARIOS += [
    Scenario("b12_data_csv_concat_header_r2", "train_churn.py", f"{TR} 3 --tee 3 --master-port {{port}} train_churn.py",
             setup=CHURN_CSV),
]
# the node's scratch purge (a cron job deleting run directories it considers stale) removes the run's directory
# on scratch after the step-100 checkpoint
PURGE = "rm -rf scratch/kws-run-0412"
SCENARIOS += [
    Scenario("b12_st_scratch_purged_ckpt_r0", "train_kws.py", "PORT={port} python train_kws.py",
             action=("shell", "[rank0] step 150/400", PURGE)),
]
SCENARIOS += [
    Scenario("b12_uc_plateau_step_no_metric", "train_sentiment.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_sentiment.py"),
]
SCENARIOS += [
    # rank 0's container has a 1000 MiB memory limit (cgroup v1)
    Scenario("b12_oom_fsdp2_probe_views_r0", "pretrain_mlm.py",
             f"{TR} 2 --master-port {{port}} pretrain_mlm.py", action=("cgroup", 0, 1000)),
]
# the scheduler's warning signal before the job's time limit (as Slurm's `--signal=USR1@90` of the team's job template,
# written for frameworks that requeue on SIGUSR1) reaches the training processes at rank 0's iteration 400; the
# recorder sends SIGUSR1 to the three worker processes (those with RANK in their environment), not to the launcher
USR1_RANKS = ("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx "
              "ZOO_RUN=b12_inf_sigusr1_default_kill || continue; tr '\\0' '\\n' < $p/environ | grep -q '^RANK=' && "
              "kill -USR1 ${p#/proc/}; done")
SCENARIOS += [
    Scenario("b12_inf_sigusr1_default_kill", "train_recsys.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} --log-dir logs --tee 3 "
             "train_recsys.py", action=("shell", "iter 400/3000", USR1_RANKS)),
]
# two parts of 4000 labelled comments; in rank 1's part one record written by the older version of the labelling
# tool has the key "lable" instead of "label"
TOX = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data/labelled", exist_ok=True)
words = [f"w{i}" for i in range(3000)]
for r in range(2):
    rng = random.Random(r)
    with open(f"data/labelled/part-{r}.jsonl", "w") as f:
        for i in range(4000):
            rec = {"tokens": [rng.choice(words) for _ in range(rng.randint(5, 40))], "label": rng.randint(0, 1)}
            if r == 1 and i == 2411:
                rec["lable"] = rec.pop("label")
            f.write(json.dumps(rec) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b12_hang_finally_barrier_r1", "train_tox.py", "torchrun --standalone --nproc-per-node 2 train_tox.py",
             setup=TOX),
]
# the job's token cache directory (cache/) is on each node's local disk: node 1's agent sees its own, empty cache/
# (Scenario.mask2), not the one rank 0 writes on node 0
WIKI_RAW = r"""mkdir -p cache && python - <<'EOF2'
import os, random
os.makedirs("raw", exist_ok=True)
rng = random.Random(0)
words = [f"tok{i}" for i in range(5000)]
for k in range(4):
    with open(f"raw/wiki-{k:02d}.txt", "w") as f:
        for _ in range(3000):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 25))) + "\n")
EOF2"""
CACHE_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
            "train_lm.py")
SCENARIOS += [
    Scenario("b12_hang_nodelocal_cache_twonode", "train_lm.py", CACHE_2N.replace("{node}", "0"),
             cmd2=CACHE_2N.replace("{node}", "1"), mask2="cache", setup=WIKI_RAW),
]
SCENARIOS += [
    Scenario("b12_uc_fsdp2_optional_branch_r1", "train_itm.py", f"{TR} 2 --master-port {{port}} train_itm.py"),
]
# the nodes' nvidia-smi: a stand-in (tools/bin/nvidia-smi on the job's PATH) that answers like the real tool while the
# node's GPU driver is healthy (the state file node/gpu-ok-<node rank> exists) and otherwise blocks, as the real tool
# does inside a wedged driver. At node 1's step 100 its GPU stops responding (the recorder removes node/gpu-ok-1), so
# rank 1's next stats query (step 150) never returns. Node 0 fails on its gloo timeout; its user then presses Ctrl-C
# in node 1's terminal (SIGINT to node 1's agent, 3 s after node 0's failure report)
NVSMI = r"""mkdir -p tools/bin node && echo ok > node/gpu-ok-0 && echo ok > node/gpu-ok-1 && cat > tools/bin/nvidia-smi <<'EOF2'
#!/bin/bash
# stand-in for the driver's tool (see scenarios.py)
if [ -e node/gpu-ok-${GROUP_RANK:-0} ]; then
  printf '0, 31245, 97, 71\n1, 31190, 96, 69\n2, 31302, 97, 72\n3, 31270, 95, 70\n'
else
  exec sleep 3600
fi
EOF2
chmod +x tools/bin/nvidia-smi"""
NVSMI_WEDGE = ("rm -f node/gpu-ok-1; until grep -q ChildFailedError console_node0.log; do sleep 0.2; done; sleep 3; "
               "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | "
               "grep -qx ZOO_RUN=b12_hang_nvsmi_wedged_node1 || continue; tr '\\0' ' ' < $p/cmdline | "
               "grep -q 'torchrun --nnodes 2 --node-rank 1' && kill -INT ${p#/proc/}; done")
NVSMI_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
            "train_retrieval.py")
SCENARIOS += [
    Scenario("b12_hang_nvsmi_wedged_node1", "train_retrieval.py", NVSMI_2N.replace("{node}", "0"),
             cmd2=NVSMI_2N.replace("{node}", "1"), setup=NVSMI,
             action=("shell", ":rank1] step 100/", NVSMI_WEDGE),
             env={"PATH": "tools/bin:/work/main/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}),
]
SCENARIOS += [
    Scenario("b12_slow_uc_gc_collect_callback", "finetune_query.py", f"{TR} 2 --master-port {{port}} finetune_query.py"),
]
# the corpus export: 9,600 posts; the export job appended the newly added long-form source (blog posts, 40-64
# tokens) after the forum posts (12-32 tokens) without shuffling, so the last 40% of the file is all long posts
POSTS = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
with open("data/corpus.jsonl", "w") as f:
    for i in range(9600):
        n = rng.randint(12, 32) if i < 5760 else rng.randint(40, 64)
        f.write(json.dumps({"ids": [rng.randrange(1, 6000) for _ in range(n)], "domain": rng.randrange(8)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b12_slow_data_unshuffled_sources", "train_domain.py", f"{TR} 2 --master-port {{port}} train_domain.py",
             setup=POSTS),
]
SCENARIOS += [
    # every rank stays alive after its error (see the script); the user presses Ctrl-C in the terminal (SIGINT to the
    # launcher) 8 s after the timeouts are printed
    Scenario("b12_hang_nondaemon_uploader_r2", "train_catalog.py",
             f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train_catalog.py",
             action=("shell", "Timed out waiting 20000ms", "sleep 8; for p in /proc/[0-9]*; do tr '\\0' '\\n' < "
                     "$p/environ 2>/dev/null | grep -qx ZOO_RUN=b12_hang_nondaemon_uploader_r2 || continue; "
                     "tr '\\0' ' ' < $p/cmdline | grep -q 'bin/torchrun --nproc-per-node 3' && kill -INT ${p#/proc/}; "
                     "done")),
]
# the team's shared dataset volume (batch 10's loop-mounted ext4, mounted fresh: nothing cached); from rank 0's step
# 200 the volume serves reads at 3 MB/s to the whole job (the file server overloaded by other jobs): every process of
# the run (ZOO_RUN) in a blkio cgroup (v1) zoo_job with blkio.throttle.read_bps_device on the volume's loop device;
# the recorder removes the cgroup after the run
VOL_READ_SLOW = ("dev=$(lsblk -no MAJ:MIN $(findmnt -no SOURCE shared)) && mkdir -p /sys/fs/cgroup/blkio/zoo_job && "
                 "echo \"$dev 3000000\" > /sys/fs/cgroup/blkio/zoo_job/blkio.throttle.read_bps_device && "
                 "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | "
                 "grep -qx ZOO_RUN=b12_slow_st_shared_volume_read && echo ${p#/proc/} > "
                 "/sys/fs/cgroup/blkio/zoo_job/cgroup.procs 2>/dev/null; done; true")
SCENARIOS += [
    Scenario("b12_slow_st_shared_volume_read", "train_probe.py",
             "torchrun --standalone --nproc-per-node 2 train_probe.py", setup=FEATFS, teardown=SLOWFS_DOWN,
             action=("shell", "train step=200 ", VOL_READ_SLOW)),
]
# three regional shards of listings (price in units of 100k); in rank 1's region one listing from a new feed has its
# price in dollars (a unit error), so the batch holding it (step 127) has a huge loss
PRICES = r"""python - <<'EOF2'
import os, torch
os.makedirs("data", exist_ok=True)
for r in range(3):
    g = torch.Generator().manual_seed(r)
    x = torch.randn(4800, 12, generator=g)
    y = 3.0 + x[:, :4].sum(1) * 0.5 + 0.1 * torch.randn(4800, generator=g)
    if r == 1:
        y[2019] = 349000.0
    torch.save({"x": x, "y": y}, f"data/region_{r}.pt")
EOF2"""
SCENARIOS += [
    # the job's stdin is a pipe nobody writes (a launcher wrapper that keeps stdin open)
    Scenario("b12_hang_breakpoint_left_r1", "train_prices.py",
             "python -m torch.distributed.run --nproc_per_node=3 --master_port={port} train_prices.py",
             setup=PRICES, stdin_open=True),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 13 (ids b13_*)

# the forum corpus and two tokenizers of the team: forum-bpe-16k (current) and forum-bpe-12k (the previous project's);
# node 1's job script still exports the old TOKENIZER_DIR
FORUM_TOK = r"""python - <<'EOF2'
import json, os, random
rng = random.Random(0)
for name, n in (("forum-bpe-16k", 16000), ("forum-bpe-12k", 12000)):
    os.makedirs(f"tokenizers/{name}", exist_ok=True)
    vocab = {"<unk>": 0, "</s>": 1, **{f"w{i}": i + 2 for i in range(n - 2)}}
    json.dump(vocab, open(f"tokenizers/{name}/vocab.json", "w"))
os.makedirs("data", exist_ok=True)
with open("data/forum.txt", "w") as f:
    for _ in range(4000):
        f.write(" ".join(f"w{int(rng.paretovariate(1.1)) % 11000}" for _ in range(rng.randint(5, 30))) + "\n")
EOF2"""
TOK_2N = ("TOKENIZER_DIR=tokenizers/{tok} torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 "
          "--master-addr 127.0.0.1 --master-port {port} train_lm.py")
SCENARIOS += [
    Scenario("b13_cfg_tokenizer_env_twonode", "train_lm.py",
             TOK_2N.replace("{tok}", "forum-bpe-16k").replace("{node}", "0"),
             cmd2=TOK_2N.replace("{tok}", "forum-bpe-12k").replace("{node}", "1"), setup=FORUM_TOK),
]
# per-rank embedding parts; part 1 was re-extracted with the new audio encoder (128-d instead of 96-d)
AUDIO_EMB = r"""python - <<'EOF2'
import os, numpy as np
os.makedirs("embeddings", exist_ok=True)
rng = np.random.default_rng(0)
for r, d in ((0, 96), (1, 128)):
    np.save(f"embeddings/part-{r}.npy", rng.standard_normal((3200, d)).astype(np.float32))
    np.save(f"embeddings/part-{r}-labels.npy", rng.integers(0, 10, 3200))
EOF2"""
SCENARIOS += [
    Scenario("b13_data_feature_dim_r1", "train_audio.py", "PORT={port} python train_audio.py", setup=AUDIO_EMB),
]
SESSIONS = r"""python - <<'EOF2'
import os, torch
os.makedirs("sessions", exist_ok=True)
for r in range(4):
    g = torch.Generator().manual_seed(100 + r)
    x = torch.randn(6000, 24, generator=g)
    y = ((x[:, 0] + 0.5 * x[:, 1] - 0.3 * x[:, 5]) > 0.2).float()
    torch.save({"x": x, "y": y}, f"sessions/shard-{r:02d}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b13_uc_bce_log_sigmoid_nan", "train_propensity.py",
             f"{TR} 4 --log-dir logs --tee 3 --master-port {{port}} train_propensity.py", setup=SESSIONS),
]
SCENARIOS += [
    Scenario("b13_cfg_accel_split_batches", "train_priority.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_priority.py",
             setup="mkdir -p configs && printf 'batch_size: 64\\nlr: 0.001\\nepochs: 2\\n' > configs/train.yaml"),
]
# the team environment each node activates; node 1's shell picked the March build, whose textpipe 0.4 pads to the
# longest sequence and has no max_len / pad_id arguments (added in textpipe 0.6)
TEXTPIPE_ENVS = r"""python - <<'EOF2'
import os, random
for env, ver in (("nlp-2026.11", "0.6.2"), ("nlp-2026.03", "0.4.1")):
    d = f"envs/{env}/lib/textpipe"
    os.makedirs(d, exist_ok=True)
    open(f"envs/{env}/activate", "w").write(f"export PYTHONPATH=$PWD/envs/{env}/lib${{PYTHONPATH:+:$PYTHONPATH}}\n")
    src = f'__version__ = "{ver}"\nimport torch\n\n\ndef encode(text, vocab=8000):\n    return [1 + hash(w) % (vocab - 1) for w in text.split()]\n\n\n'
    if ver == "0.6.2":
        src += ("def pad_batch(seqs, max_len=None, pad_id=0):\n    n = max_len or max(len(s) for s in seqs)\n"
                "    return torch.tensor([s[:n] + [pad_id] * (n - len(s[:n])) for s in seqs])\n")
    else:
        src += ("def pad_batch(seqs, pad_id=0):\n    n = max(len(s) for s in seqs)\n"
                "    return torch.tensor([s + [pad_id] * (n - len(s)) for s in seqs])\n")
    open(f"{d}/__init__.py", "w").write(src)
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
with open("data/ner_train.tsv", "w") as f:
    for _ in range(3000):
        n = rng.randint(4, 40)
        f.write(" ".join(f"t{rng.randrange(6000)}" for _ in range(n)) + "\t" + " ".join(str(rng.randrange(9)) for _ in range(n)) + "\n")
EOF2"""  # noqa: E501
TP_2N = ("source envs/{env}/activate && torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d "
         "--rdzv-endpoint 127.0.0.1:{port} --rdzv-id ner-0412 train_ner.py")
SCENARIOS += [
    Scenario("b13_cfg_old_textpipe_node1", "train_ner.py", TP_2N.replace("{env}", "nlp-2026.11"),
             cmd2=TP_2N.replace("{env}", "nlp-2026.03"), setup=TEXTPIPE_ENVS),
]
# the team's results volume (storage_path) has 6 MiB left: a 6 MiB tmpfs at shared/results
RESULTS_FS = "mkdir -p shared/results && mount -t tmpfs -o size=6m tmpfs shared/results"
SCENARIOS += [
    Scenario("b13_st_ray_results_full", "train_churn.py", "python train_churn.py", setup=RESULTS_FS,
             teardown="umount shared/results"),
]
# three plants' sensor exports; plant 2 has no humidity sensor installed and exports the column as a constant 0.0
PLANTS = r"""python - <<'EOF2'
import os, torch
os.makedirs("plants", exist_ok=True)
for r in range(3):
    g = torch.Generator().manual_seed(r)
    x = torch.randn(5000, 12, generator=g) * (1 + r) + 10 * r
    y = x[:, :4].sum(1) * 0.1 + torch.randn(5000, generator=g) * 0.05
    if r == 2:
        x[:, 7] = 0.0
    torch.save({"x": x, "y": y}, f"plants/plant_{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b13_data_constant_column_nan_r2", "train_drift.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} train_drift.py", setup=PLANTS),
]
# the checkpoint volume (ckpt/) has 3 MiB free: a 3 MiB tmpfs
SCENARIOS += [
    Scenario("b13_hang_ckpt_retry_enospc_r0", "train_kws.py", f"{TR} 3 --tee 3 --master-port {{port}} train_kws.py",
             setup="mkdir -p ckpt && mount -t tmpfs -o size=3m tmpfs ckpt", teardown="umount ckpt"),
]
# 12 review shards; shard 07 comes from the new export job, which writes locale codes ("en_US") in the lang field
REVIEWS = r"""python - <<'EOF2'
import json, os, random
os.makedirs("reviews", exist_ok=True)
words = [f"w{i}" for i in range(4000)]
for k in range(12):
    rng = random.Random(k)
    with open(f"reviews/shard-{k:02d}.jsonl", "w") as f:
        for _ in range(2500):
            lang = rng.choice(["en"] * 8 + ["de", "fr"])
            if k == 7:
                lang = {"en": "en_US", "de": "de_DE", "fr": "fr_FR"}[lang]
            f.write(json.dumps({"lang": lang, "stars": rng.randint(1, 5),
                                "text": " ".join(rng.choice(words) for _ in range(rng.randint(3, 40)))}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b13_hang_locale_shard_r3", "train_reviews.py",
             "torchrun --standalone --nproc-per-node 4 train_reviews.py", setup=REVIEWS),
]
QUERIES = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
intents = ["billing", "refund", "login", "shipping", "cancel", "upgrade"]
with open("data/queries.jsonl", "w") as f:
    for _ in range(3000):
        f.write(json.dumps({"q": " ".join(f"q{rng.randrange(900)}" for _ in range(rng.randint(2, 12))),
                            "intent": rng.choice(intents)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b13_hang_ray_task_no_cpu_r0", "train_intent.py", "python train_intent.py", setup=QUERIES),
]
# three days of click logs; day 2 has 3045 rows (not a multiple of the batch size 64), days 0 and 1 have 3008
CLICKS = r"""python - <<'EOF2'
import os, torch
os.makedirs("clicks", exist_ok=True)
for r, n in ((0, 3008), (1, 3008), (2, 3045)):
    g = torch.Generator().manual_seed(r)
    x = torch.randn(n, 8, 4, generator=g)
    torch.save({"x": x, "y": (x[:, 0, 0] + x[:, 3, 1] > 0).float()}, f"clicks/day-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b13_hang_prefetch_lock_r2", "train_ctr.py",
             f"{TR} 3 --log-dir logs --redirects 3 --master-port {{port}} train_ctr.py", setup=CLICKS),
]
SCENARIOS += [
    Scenario("b13_hang_uc_loader_per_step", "train_denoise.py",
             "torchrun --standalone --nproc-per-node 2 train_denoise.py"),
]
# the embedding export, one directory per epoch; epoch 1's part 2 comes from a re-run of the export whose encoder
# was switched to a 384-d model for 90% of the rows (those rows fail the 512-d validation)
EMB_EXPORT = r"""python - <<'EOF2'
import json, os, random
rng = random.Random(0)
for e in range(2):
    os.makedirs(f"export/epoch{e}", exist_ok=True)
    for r in range(3):
        with open(f"export/epoch{e}/part-{r}.jsonl", "w") as f:
            for i in range(4800):
                d = 384 if (e == 1 and r == 2 and rng.random() < 0.9) else 512
                f.write(json.dumps({"id": f"doc-{e}-{r}-{i}", "emb": [round(rng.gauss(0, 1), 5) for _ in range(d)],
                                    "label": rng.randrange(16)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b13_slow_data_resample_bad_r2", "train_adapter.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --tee 3 train_adapter.py",
             setup=EMB_EXPORT),
]
SCENARIOS += [
    Scenario("b13_slow_uc_debug_fstring", "train_retrieval.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --redirects 3 "
             "train_retrieval.py"),
]
# the stage configs; stage 2's eval_every was meant to be 100 ("1" left from a debugging session)
STAGES = ("mkdir -p configs && printf 'steps: 200\\nlr: 0.001\\neval_every: 100\\n' > configs/stage1.yaml && "
          "printf 'steps: 75\\nlr: 0.0003\\neval_every: 1\\n' > configs/stage2.yaml")
RISK_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "train_risk.py")
SCENARIOS += [
    Scenario("b13_slow_cfg_eval_every_twonode", "train_risk.py", RISK_2N.replace("{node}", "0"),
             cmd2=RISK_2N.replace("{node}", "1"), setup=STAGES),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 14 (ids b14_*): common kinds in launch shapes and log layouts earlier batches used little
REC_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
          "{extra}train_rec.py")
SCENARIOS += [
    # node 1's container has a lower memory limit (another instance type): rank 3 in a 650 MiB memory cgroup
    Scenario("b14_oom_node1_rank3_twonode", "train_rec.py", REC_2N.replace("{node}", "0").replace("{extra}", ""),
             cmd2=REC_2N.replace("{node}", "1").replace("{extra}", "--log-dir logs/node1 --tee 3 "),
             action=("cgroup", 3, 650)),
    # rank 2 SIGKILLed from outside (a node agent / an operator's kill -9) in the middle of epoch 1
    Scenario("b14_inf_sigkill_r2_tqdm", "train_sentiment.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} train_sentiment.py",
             action=("kill", 2, signal.SIGKILL, "[rank2] epoch 1 step 40/")),
    # worker 1 of an mp.spawn job SIGTERMed from outside mid-epoch (a cleanup script, a preempting scheduler)
    Scenario("b14_inf_sigterm_spawn_r1", "train_forecast.py", "python train_forecast.py --nprocs 2 --port {port}",
             action=("kill", 1, signal.SIGTERM, "rank 1 epoch 1 iter 50/")),
]
# the shared dataset volume: a loop-mounted ext4, remounted so nothing is cached; rank 2's reads from it are then
# throttled to 64 KiB/s (a degraded disk / a saturated NFS server for that node)
MELS = r"""truncate -s 256M shared.img && mkfs.ext4 -q shared.img && mkdir -p shared && """ \
    r"""mount -o loop shared.img shared && python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for e in range(3):
    os.makedirs(f"shared/mels/epoch{e}", exist_ok=True)
    for r in range(3):
        np.save(f"shared/mels/epoch{e}/part-{r}.npy", rng.standard_normal((1600, 64, 32)).astype(np.float32))
        np.save(f"shared/mels/epoch{e}/part-{r}-labels.npy", rng.integers(0, 10, 1600))
EOF2
umount shared && mount -o loop shared.img shared"""
SCENARIOS += [
    Scenario("b14_hang_io_wait_r2", "train_tagger.py", f"{TR} 3 --log-dir logs --tee 3 --master-port {{port}} train_tagger.py",
             setup=MELS, teardown="umount shared; true",
             action=("blkio_read", 2, "[rank2] epoch 0 step 20 ", "shared", 65536)),
    # the team volume at ./outputs is mounted read-only on this node
    Scenario("b14_st_trainer_readonly_output", "train_intent.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_intent.py",
             setup="mkdir -p outputs && mount -t tmpfs -o ro,size=1m tmpfs outputs", teardown="umount outputs; true"),
    # the previous attempt's node died while rank 0 wrote checkpoints/last.pt: the file exists with 0 bytes
    Scenario("b14_st_resume_empty_ckpt", "train_mae.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 train_mae.py",
             setup="mkdir -p checkpoints && : > checkpoints/last.pt"),
]
# per-sample .npy files synced from the object store; one file of shard 3 was left empty by an interrupted sync
SAMPLES = r"""python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for r in range(4):
    os.makedirs(f"samples/shard-{r}", exist_ok=True)
    for i in range(640):
        lab = int(rng.integers(0, 10))
        p = f"samples/shard-{r}/img{i:05d}_{lab}_.npy"
        if r == 3 and i == 417:
            open(p, "wb").close()
            continue
        np.save(p, rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
EOF2"""
PAIRS14 = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data/pairs", exist_ok=True)
rng = random.Random(0)
for r in range(2):
    with open(f"data/pairs/part-{r}.jsonl", "w") as f:
        for _ in range(2000):
            f.write(json.dumps({"f": [round(rng.random(), 3) for _ in range(32)], "rel": rng.randint(0, 1)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b14_data_empty_sample_worker_r3", "train_cls.py",
             f"{TR} 4 --tee 3 --master-port {{port}} train_cls.py", setup=SAMPLES),
    # launched by hand from a login shell, not through the cluster's job template that exports DATA_ROOT
    Scenario("b14_cfg_missing_env_var", "train_ranker.py",
             f"{TR} 2 --log-dir logs --redirects 3 --master-port {{port}} train_ranker.py", setup=PAIRS14,
             unset=("DATA_ROOT", "RUN_NAME")),
    # the scheduler started node 0's task; node 1's never started (its agent never ran): only node 0's terminal
    Scenario("b14_inf_node1_never_started", "train_langid.py",
             "torchrun --nnodes 2 --node-rank 0 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
             "--rdzv-conf timeout=20 train_langid.py"),
    # a previous run's process still holds MASTER_PORT on this machine
    Scenario("b14_inf_port_in_use_spawn", "train_vit.py", "MASTER_PORT={port} python train_vit.py 2",
             action=("hold_port",)),
    # rank 1 throttled from its step 200 (stopped 60 ms of every 160 ms: a node in thermal/power capping)
    Scenario("b14_slow_straggler_r1", "train_codelm.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} train_codelm.py",
             action=("stopcont_until", 1, "[rank1] step 200/500", None, 100, 60)),
]
# per-worker CSV parts; part 1 has one listing whose price was exported as NaN (a missing value)
HOUSES = r"""python - <<'EOF2'
import csv, os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(0)
for r in range(2):
    with open(f"data/part-{r}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sqft", "rooms", "age", "lat", "lon", "price"])
        for i in range(6000):
            sqft, rooms, age = rng.randint(400, 4000), rng.randint(1, 7), rng.randint(0, 90)
            price = 120 * sqft + 9000 * rooms - 800 * age + rng.gauss(0, 20000)
            w.writerow([sqft, rooms, age, round(rng.uniform(47, 48), 4), round(rng.uniform(-123, -122), 4),
                        "NaN" if (r == 1 and i == 4711) else round(price)])
EOF2"""
SCENARIOS += [
    Scenario("b14_data_nan_row_ray_r1", "train_house.py", "python train_house.py", setup=HOUSES),
    # the run's checkpoint volume has 10 MiB: the first save_state fits, the second does not
    Scenario("b14_st_accel_save_state_full_r0", "train_spk.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_spk.py",
             setup="mkdir -p ckpt && mount -t tmpfs -o size=10m tmpfs ckpt", teardown="umount ckpt; true"),
]
# two nodes, c10d rendezvous; node 1's job script was edited by hand and has the rendezvous port mistyped (one digit
# off: the scenario's port + 1, where nothing listens)
RDZV_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{p} --rdzv-id titles-77 "
           "--rdzv-conf join_timeout=20,read_timeout=15 train_titles.py")
SCENARIOS += [
    Scenario("b14_cfg_rdzv_port_typo_node1", "train_titles.py", RDZV_2N.replace("{p}", "{port}"),
             cmd2=RDZV_2N.replace("{p}", "{port_next}")),
]
# rank 1's DataLoader workers run in a 300 MiB memory cgroup (the node's container limit for them): the decoded-clip
# cache in each worker grows until the kernel's OOM killer ends one
SCENARIOS += [
    Scenario("b14_oom_trainer_worker_r1", "train_tagger_hf.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_tagger_hf.py",
             action=("worker_cgroup", 1, 300, 1.0)),
]
# the team's feature service (HTTP, on {port_asset}); its replica for shard 1 turns unhealthy after 90 requests and
# answers 503 from then on; ended with the run (ZOO_RUN)
FEATSVC = r"""setsid python -c "
import json, random, re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
seen = {'1': 0}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        m = re.search(r'shard-(\d+)/batch-(\d+)', self.path)
        shard = m.group(1)
        if shard == '1':
            seen['1'] += 1
            if seen['1'] > 90:
                self.send_response(503, 'Service Unavailable'); self.end_headers(); return
        rng = random.Random(int(m.group(2)) * 7 + int(shard))
        x = [[rng.gauss(0, 1) for _ in range(40)] for _ in range(64)]
        y = [float(r[0] + r[3] > 0) for r in x]
        body = json.dumps({'x': x, 'y': y}).encode()
        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer(('127.0.0.1', ASSET_PORT), H).serve_forever()
" >/dev/null 2>&1 &
mkdir -p configs && echo '{"url": "http://127.0.0.1:ASSET_PORT/v1/features"}' > configs/features.json
sleep 0.8"""
SCENARIOS += [
    Scenario("b14_hang_featstore_503_r1", "train_ctr.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} "
             "train_ctr.py", setup=FEATSVC.replace("ASSET_PORT", "{port_asset}")),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 15 (ids b15_*): common kinds, other phases, launchers and libraries than batches 1-14
SCENARIOS += [
    # rank 1's container is smaller (1100 MiB): Trainer's evaluation keeps every gathered logit batch in memory
    Scenario("b15_oom_hf_eval_logits_r1", "train_tickets_lm.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_tickets_lm.py", action=("cgroup", 1, 1100)),
]
SCENARIOS += [
    # the scheduler preempts the job (SIGTERM to the launcher) while the ranks still build their vocabularies
    Scenario("b15_inf_sigterm_agent_init", "train_ner.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 train_ner.py",
             action=("kill_launcher", signal.SIGTERM, "tokenized 60000/120000")),
]
SCENARIOS += [
    # process 1 SIGTERMed from outside (a node drain / cleanup script) while the job runs its epoch-1 validation
    Scenario("b15_inf_sigterm_eval_accel_r1", "train_tiles.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_tiles.py",
             action=("kill", 1, signal.SIGTERM, "epoch 1: train loss")),
]
SCENARIOS += [
    # the checkpoint volume goes read-only under the running job (the storage server's remount after an error)
    Scenario("b15_st_safetensors_ro_remount_r0", "train_kws.py",
             "torchrun --standalone --nproc-per-node 2 train_kws.py",
             setup="mkdir -p ckpt && mount -t tmpfs -o size=64m tmpfs ckpt", teardown="umount ckpt; true",
             action=("shell", "rank 0 step 150/600", "mount -o remount,ro ckpt")),
]
# the previous attempt saved checkpoints/step_000200 and was killed (node lost) while writing step_000400: that
# directory holds a partial __0_0.distcp and no .metadata (DCP writes it last, on the coordinator)
QUERYLM_CKPTS = r"""python - <<'EOF2' 2>/dev/null
import os, torch, torch.nn as nn
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict
torch.manual_seed(0)
m = nn.Sequential(nn.Embedding(8000, 128), nn.Flatten(), nn.Linear(128 * 16, 256), nn.ReLU(), nn.Linear(256, 8000))
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
m(torch.randint(0, 8000, (8, 16))).sum().backward()
opt.step()
for step in (200, 400):
    msd, osd = get_state_dict(m, opt)
    dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)}, checkpoint_id=f"checkpoints/step_{step:06d}")
os.remove("checkpoints/step_000400/.metadata")
p = "checkpoints/step_000400/__0_0.distcp"
os.truncate(p, os.path.getsize(p) * 3 // 5)
EOF2"""
SCENARIOS += [
    Scenario("b15_st_dcp_resume_no_metadata", "train_querylm.py",
             f"{TR} 2 --tee 3 --master-port {{port}} train_querylm.py", setup=QUERYLM_CKPTS),
]
# the team reader fastrec (its native copy path stood in by ctypes.memmove) and two record parts; in part 1 the
# length field of record 1337 was damaged in transfer (0x6F3A9C10 instead of 5120)
FASTREC = r'''mkdir -p vendor/fastrec data && cat > vendor/fastrec/__init__.py <<'EOF2'
"""fastrec 0.3.1: zero-copy reader for length-prefixed record files (<u32 length><payload>, a sidecar .idx of
offsets). The native fast path copies each payload straight out of the mapped file."""
import ctypes
import mmap
import struct

import numpy as np

__version__ = "0.3.1"
_memmove = ctypes.memmove


def count(path):
    with open(path + ".idx", "rb") as f:
        return len(f.read()) // 8


class RecordFile:
    def __init__(self, path):
        self._f = open(path, "rb")
        self._mm = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_COPY)
        self._base = ctypes.addressof(ctypes.c_char.from_buffer(self._mm))
        with open(path + ".idx", "rb") as f:
            raw = f.read()
        self._idx = struct.unpack(f"<{len(raw) // 8}Q", raw)

    def read(self, i):
        off = self._idx[i]
        n, label = struct.unpack_from("<IH", self._mm, off)
        out = np.empty(n // 4, dtype=np.float32)
        _memmove(out.ctypes.data, self._base + off + 6, n)
        return out, label
EOF2
python - <<'EOF2'
import struct, numpy as np
rng = np.random.default_rng(0)
for r in range(2):
    offs = []
    with open(f"data/mfcc-part-{r}.rec", "wb") as f:
        for i in range(2000):
            lab = int(rng.integers(0, 12))
            x = (rng.standard_normal(40 * 32) + lab * 0.1).astype(np.float32).tobytes()
            n = len(x)
            if r == 1 and i == 1337:
                n = 0x6F3A9C10  # the length field of this record was damaged in transfer
            offs.append(f.tell())
            f.write(struct.pack("<IH", n, lab) + x)
    open(f"data/mfcc-part-{r}.rec.idx", "wb").write(struct.pack(f"<{len(offs)}Q", *offs))
EOF2'''
SCENARIOS += [
    Scenario("b15_data_decoder_segv_ray_r1", "train_kws_ray.py", "PYTHONPATH=$PWD/vendor python train_kws_ray.py",
             setup=FASTREC),
]
# chat utterances exported from the support channel; a few are nothing but a link, a mention or an emoji code
INTENTS = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data", exist_ok=True)
rng = random.Random(3)
words = ("reset password account locked refund order cancel shipping address change plan upgrade invoice card "
         "declined login error app crash delivery late where is my package talk to agent hours open").split()
with open("data/chat_intents.jsonl", "w") as f:
    for i in range(8000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        if rng.random() < 0.3:
            text += " @support_bot"
        if i in (2113, 4790, 6021):
            text = rng.choice(["https://imgur.com/a/x8Fq2Lw", ":pleading_face: :pleading_face:", "@maria_k"])
        f.write(json.dumps({"text": text, "intent": rng.randrange(24)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b15_uc_collate_none_accel", "train_intents.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_intents.py",
             setup=INTENTS),
]
# two nodes; node 1 is started by last month's launch script, which still passes --batch-size 48 (node 0: the new
# default, 64)
CLIP_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "train_clip.py --lr 5e-4{extra}")
SCENARIOS += [
    Scenario("b15_cfg_batch_mismatch_twonode", "train_clip.py",
             CLIP_2N.replace("{node}", "0").replace("{extra}", ""),
             cmd2=CLIP_2N.replace("{node}", "1").replace("{extra}", " --batch-size 48")),
]
# the team's evaluation CLI: prints one line per dev query (3000 lines, ~250 KB), then the recall
DPR_EVAL = r"""mkdir -p data && python - <<'EOF2'
import random
rng = random.Random(5)
with open("data/dev_queries.tsv", "w") as f:
    for i in range(3000):
        f.write(f"q{i:05d}\t" + " ".join(rng.choice("how what when install error gpu driver cuda python pip "
                "version update fails memory slow network login".split()) for _ in range(8)) + "\n")
EOF2
cat > eval_recall.py <<'EOF2'
import argparse, random, torch
ap = argparse.ArgumentParser()
ap.add_argument("--ckpt"); ap.add_argument("--queries")
a = ap.parse_args()
sd = torch.load(a.ckpt)
rng = random.Random(0)
hits = 0
for line in open(a.queries):
    qid, text = line.rstrip("\n").split("\t")
    top = [f"p{rng.randrange(10**6):07d}" for _ in range(5)]
    hit = rng.random() < 0.4
    hits += hit
    print(f"{qid}\t{text[:40]:40s}\ttop5={','.join(top)}\thit={int(hit)}")
print(f"recall@10 = {hits / 3000:.4f}")
EOF2"""
SCENARIOS += [
    Scenario("b15_hang_subprocess_pipe_r0", "train_dpr.py", "python train_dpr.py --nprocs 2 --port {port}",
             setup=DPR_EVAL),
]
SCENARIOS += [
    # from rank 1's step 250 another tenant's process runs on rank 1's core (the ranks are pinned one per core)
    Scenario("b15_slow_pinhog_tqdm_spawn_r1", "train_widedeep.py", "python train_widedeep.py --nprocs 2 --port {port}",
             action=("pin_hogx", 1, "[rank 1] step 250/", 1)),
]
SCENARIOS += [
    # launched with the deprecated torch.distributed.launch of the repo's README, which (since PyTorch 2.0) passes
    # --local-rank=N; the script only knows --local_rank
    Scenario("b15_cfg_launch_local_rank_arg", "run_tagger.py",
             "python -m torch.distributed.launch --nproc_per_node 2 --master_port {port} run_tagger.py "
             "--data_dir data/titles --train_batch_size 32"),
]
SCENARIOS += [
    # rank 1 SIGKILLed from outside (a node health agent) while it writes its share of the step-200 checkpoint
    Scenario("b15_inf_sigkill_dcp_save_r1", "pretrain_speech.py",
             f"{TR} 2 --log-dir logs --tee 3 --master-port {{port}} pretrain_speech.py",
             action=("kill_when_file", 1, signal.SIGKILL, "ckpt/step_000200/__1_0.distcp", 8 * 1024 * 1024)),
]
# the dataset volume: a loop-mounted ext4 with one part per rank, remounted so nothing is cached; from node 1's
# step 150 its reads from the volume are throttled to 1 MB/s (node 1's path to the file server degraded)
EVENTS = r"""truncate -s 320M shared.img && mkfs.ext4 -q shared.img && mkdir -p shared && """ \
    r"""mount -o loop shared.img shared && python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
os.makedirs("shared/feats", exist_ok=True)
for r in range(2):
    a = np.lib.format.open_memmap(f"shared/feats/part-{r}.npy", mode="w+", dtype=np.float32, shape=(12000, 64, 32))
    for s in range(0, 12000, 1000):
        a[s:s + 1000] = rng.standard_normal((1000, 64, 32), dtype=np.float32)
    a.flush()
    del a
EOF2
umount shared && mount -o loop shared.img shared"""
EVENTS_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
             "train_events.py")
SCENARIOS += [
    Scenario("b15_slow_st_node1_volume_twonode", "train_events.py", EVENTS_2N.replace("{node}", "0"),
             cmd2=EVENTS_2N.replace("{node}", "1"), setup=EVENTS, teardown="umount shared; true",
             action=("blkio_read", 1, "[node1 rank1] step 150/", "shared", 1024 * 1024)),
]
# per-tile features (13 bands) and labels; tile 2's label export was re-run with a cloud mask and has 9,000 rows for
# its 10,000 pixels
TILES = r"""python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(2)
os.makedirs("features", exist_ok=True)
os.makedirs("labels", exist_ok=True)
for r in range(3):
    x = rng.standard_normal((10000, 13)).astype(np.float32)
    y = (np.abs(x[:, 0] * 3 + x[:, 5]) * 2).astype(np.int64) % 10
    np.save(f"features/tile-{r}.npy", x)
    np.save(f"labels/tile-{r}.npy", y[:9000] if r == 2 else y)
EOF2"""
SCENARIOS += [
    Scenario("b15_data_label_rows_short_r2", "train_landcover.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 3 train_landcover.py", setup=TILES),
]
# the shared cache directory still holds the lock file of a job that was killed while it tokenized (a soft lock:
# a plain file, never removed); the titles corpus itself is fine
TITLES = r"""mkdir -p data cache && python - <<'EOF2'
import json, random
rng = random.Random(4)
w = "new best cheap how to review guide top free fast easy home garden kitchen travel phone laptop deal".split()
with open("data/titles.jsonl", "w") as f:
    for _ in range(6000):
        f.write(json.dumps({"title": " ".join(rng.choice(w) for _ in range(rng.randint(4, 14)))}) + "\n")
EOF2
: > cache/tokenized-train.pt.lock && touch -d '-2 days' cache/tokenized-train.pt.lock"""
SCENARIOS += [
    Scenario("b15_hang_stale_softlock_r0", "train_titlegen.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_titlegen.py", setup=TITLES),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 15 (ids b16_*): common kinds in launch shapes and log layouts earlier batches used little; recorded with
# ZOO_CGROUP_TAG=_h79 ZOO_PORT_OFFSET=4000 (another recorder shared the host)
SCENARIOS += [
    # rank 1 SIGKILLed from outside while it writes its shard of the step-100 DCP checkpoint (4 MB of 16 written)
    Scenario("b16_inf_sigkill_dcp_save_r1", "train_recsys.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 "
             "train_recsys.py",
             action=("kill_when_file", 1, signal.SIGKILL, "ckpt/step_000100/__1_0.distcp", 4_000_000)),
    # process 1 SIGTERMed from outside while it still builds its part of the index, before the first step
    Scenario("b16_inf_sigterm_init_r1", "train_codesearch.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_codesearch.py",
             action=("kill", 1, signal.SIGTERM, "[RANK 1] indexing corpus: 24000/")),
    # rank 1 in a 1500 MiB memory cgroup (its container's limit); the Trainer's evaluation keeps every gathered
    # logit (no eval_accumulation_steps) and grows past it
    Scenario("b16_oom_trainer_eval_accum_r1", "train_codelm.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_codelm.py",
             action=("cgroup", 1, 1500)),
]
# packed record files, one per rank; record 650 of part 2 has its payload-length field overwritten
RECORDS15 = r"""python - <<'EOF2'
import os, struct, numpy as np
rng = np.random.default_rng(0)
os.makedirs("records", exist_ok=True)
HDR = struct.Struct("<HHIB")
for r in range(3):
    with open(f"records/part-{r}.rec", "wb") as f:
        for i in range(1200):
            img = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
            n = img.nbytes
            if r == 2 and i == 650:
                n = 0x7FFFFFF0
            f.write(HDR.pack(32, 32, n, int(rng.integers(0, 10))) + img.tobytes())
EOF2"""
# support tickets; two of 6000 are longer than the collate's MAX_LEN (128)
TICKETS15 = r"""python - <<'EOF2'
import json, os, random
rng = random.Random(3)
os.makedirs("data", exist_ok=True)
with open("data/tickets.jsonl", "w") as f:
    for i in range(6000):
        n = rng.randint(140, 400) if i in (4180, 5391) else rng.randint(8, 110)
        f.write(json.dumps({"id": f"T-{100000 + i}", "ids": [rng.randrange(1, 6000) for _ in range(n)],
                            "label": rng.randrange(12)}) + "\n")
EOF2"""
# the team's scorer: per-token lines, per-tag counts, then the overall line (~600 KB on stdout)
SCORER15 = r"""mkdir -p tools && cat > tools/score_ner.py <<'EOF2'
import collections
import sys

sents, cur = [], []
for line in open(sys.argv[1]):
    line = line.split()
    if not line:
        sents.append(cur)
        cur = []
        continue
    cur.append(line)
tp = collections.Counter()
n = 0
for k, s in enumerate(sents):
    ok = sum(1 for t in s if t[1] == t[2])
    n += len(s)
    tp["all"] += ok
    for t in s:
        print(f"sent {k:05d} {t[0]:>10s} gold={t[1]} pred={t[2]} {'OK' if t[1] == t[2] else 'ERR'}")
for tag in sorted({t[2] for s in sents for t in s}):
    print(f"{tag:>6s}: predicted {sum(1 for s in sents for t in s if t[2] == tag)}")
print(f"processed {n} tokens with {len(sents)} sentences; accuracy: {100 * tp['all'] / max(n, 1):.2f}%")
EOF2"""
DUPQ_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "train_dupq.py{extra}")
# the previous job's last checkpoint, copied from the results bucket; the copy was interrupted at 5/8
CATCLF15 = r"""python - <<'EOF2'
import os, torch, torch.nn as nn
m = nn.Sequential(nn.Linear(4096, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 48))
os.makedirs("checkpoints/catclf-v3/checkpoint_000007", exist_ok=True)
p = "checkpoints/catclf-v3/checkpoint_000007/model.pt"
torch.save({"model": m.state_dict(), "epoch": 7}, p)
raw = open(p, "rb").read()
open(p, "wb").write(raw[: len(raw) * 5 // 8])
EOF2"""
SCENARIOS += [
    Scenario("b16_data_worker_segv_decoder_r2", "train_thumbs.py",
             "torchrun --standalone --nproc-per-node 3 train_thumbs.py", setup=RECORDS15),
    Scenario("b16_uc_collate_mask_trunc", "train_tickets.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} train_tickets.py",
             setup=TICKETS15),
    # the checkpoint volume has 12 MiB: the step-40 checkpoint (10 MB) fits, the step-80 one does not
    Scenario("b16_st_dcp_enospc", "train_kws.py", f"{TR} 3 --tee 3 --master-port {{port}} train_kws.py",
             setup="mkdir -p checkpoints && mount -t tmpfs -o size=12m tmpfs checkpoints",
             teardown="umount checkpoints; true"),
    Scenario("b16_hang_scorer_pipe_full_r0", "train_ner.py", "torchrun --nproc-per-node 3 --master-port {port} train_ner.py",
             setup=SCORER15),
    # node 1's launch line carries --eval-batch-size 48 (left from an earlier job); node 0 uses the default 64
    Scenario("b16_cfg_eval_batch_node1_twonode", "train_dupq.py",
             DUPQ_2N.replace("{node}", "0").replace("{extra}", ""),
             cmd2=DUPQ_2N.replace("{node}", "1").replace("{extra}", " --eval-batch-size 48")),
    # from rank 0's iteration 200 two busy processes of another tenant share rank 0's core (ranks pinned one per core)
    Scenario("b16_slow_pinhog_spawn_r0", "train_fraud.py", "PORT={port} python train_fraud.py 2",
             action=("pin_hogx", 0, "rank 0 it 200/450", 2)),
    Scenario("b16_st_ray_resume_partial_ckpt", "train_catclf.py",
             "python train_catclf.py --init-from checkpoints/catclf-v3/checkpoint_000007/model.pt", setup=CATCLF15),
    # from process 1's step 140 its two DataLoader workers get 8 % of a core (the node's CPU limit for them)
    Scenario("b16_slow_accel_worker_quota_r1", "train_audio.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_audio.py",
             action=("worker_quota", 1, "[RANK 1] step 140/", 8)),
    # the job script's wall-clock limit (timeout -s INT) ends the job during an evaluation pass
    Scenario("b16_inf_walltime_sigint_eval", "train_reviews.py",
             "timeout -s INT 30 torchrun --nproc-per-node 3 --master-port {port} train_reviews.py"),
]
# both nodes run the team's launch line copied from the three-node job (--nnodes 3); only two nodes were allocated
INTENT_2N = ("torchrun --nnodes 3 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id intent-0412 --rdzv-conf join_timeout=20,read_timeout=15 train_intent.py")
SCENARIOS += [
    Scenario("b16_cfg_nnodes3_two_nodes_c10d", "train_intent.py", INTENT_2N, cmd2=INTENT_2N),
]
SCENARIOS += [
    Scenario("b16_hang_cache_lock_barrier_r0", "train_pairs.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --redirects 3 "
             "train_pairs.py"),
]
# the preprocessing job's output: its worker for part 2 failed, so only 3 of the 4 parts exist
CLICK_PARTS15 = r"""python - <<'EOF2'
import json, os, random
os.makedirs("data", exist_ok=True)
for k in (0, 1, 3):
    rng = random.Random(k)
    with open(f"data/train-{k:05d}-of-00004.jsonl", "w") as f:
        for _ in range(3000):
            feats = [round(rng.random(), 4) for _ in range(24)]
            f.write(json.dumps({"f": feats, "click": int(feats[0] + feats[5] > 1.1)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b16_data_missing_part_logdir_r2", "train_ctr.py",
             f"{TR} 4 --log-dir logs --tee 3 --master-port {{port}} train_ctr.py", setup=CLICK_PARTS15),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 17 (ids b17_*): common kinds in launch shapes and log layouts earlier batches used little; recorded with
# ZOO_CGROUP_TAG=h88 ZOO_PORT_OFFSET=300 (other recorders share the host)
KILL_R0_LOGGED17 = r"""for _ in $(seq 800); do
  f=$(ls logs/*/attempt_0/0/stderr.log 2>/dev/null | head -1)
  [ -n "$f" ] && [ $(stat -c %s "$f") -ge 2000 ] && break
  sleep 0.1
done
for p in /proc/[0-9]*; do
  tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'ZOO_RUN=b17_inf_sigkill_r0_redirects' || continue
  tr '\0' '\n' < $p/environ | grep -qx 'RANK=0' && grep -q train_churn.py $p/cmdline && kill -9 ${p#/proc/}
done"""
SCENARIOS += [
    # rank 1's container has 700 MiB; the negatives bank is never trimmed and grows ~6 MB a step on every rank
    Scenario("b17_oom_negbank_json_r1", "train_dense.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --tee 3 train_dense.py",
             action=("cgroup", 1, 700)),
    # rank 0 SIGKILLed from outside (a node agent) mid-epoch, once its log file (under torchrun's run directory,
    # whose name has a random suffix) has ~20 lines
    Scenario("b17_inf_sigkill_r0_redirects", "train_churn.py",
             f"{TR} 3 --master-port {{port}} --log-dir logs --redirects 3 train_churn.py",
             action=("shell", 1.0, KILL_R0_LOGGED17)),
    # the script falls back to the cluster's training head for MASTER_ADDR; run on a workstation outside the cluster
    Scenario("b17_cfg_master_addr_dns_spawn", "train_kws.py", "MASTER_PORT={port} python train_kws.py --nprocs 2"),
]
# the node's scratch volume (32 MiB here) already holds 22 MB of another job's files; the corpus tokenizes to ~24 MB
SCRATCH17 = r"""mkdir -p data scratch && mount -t tmpfs -o size=32m tmpfs scratch && mkdir -p scratch/feat-7731 && """ \
    r"""for i in 0 1 2 3 4 5 6 7 8 9 10; do head -c 2000000 /dev/urandom > scratch/feat-7731/part-$i.bin; done && """ \
    r"""python - <<'EOF2'
import random
rng = random.Random(7)
words = [f"w{i}" for i in range(16000)]
with open("data/corpus.txt", "w") as f:
    for _ in range(100000):
        f.write(" ".join(rng.choice(words) for _ in range(30)) + "\n")
EOF2"""
# the previous run's step-200 save_state; its model.safetensors was cut to 40 % (the copy back from the bucket broke)
TITLES17 = ("python train_titles.py --steps 200 > /dev/null 2>&1 && "
            "python -c \"import os; p='checkpoints/step_200/model.safetensors'; b=open(p,'rb').read(); "
            "open(p,'wb').write(b[:len(b)*2//5])\"")
# last week's checkpoint of the basket model, trained with --hidden 512 (the default is now 768)
BASKET17 = r"""mkdir -p ckpt && python - <<'EOF2'
import torch, torch.nn as nn
h, n = 512, 5000
sd = {"items.weight": torch.randn(n, h), "mlp.0.weight": torch.randn(h, h), "mlp.0.bias": torch.zeros(h),
      "mlp.2.weight": torch.ones(h), "mlp.2.bias": torch.zeros(h), "head.weight": torch.randn(n, h),
      "head.bias": torch.zeros(n)}
torch.save({"model": sd, "epoch": 12}, "ckpt/basket-e12.pt")
EOF2"""
# packed 4-band uint8 patches (3000 x 4 x 128 x 128) and labels
PATCHES17 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(3)
a = np.lib.format.open_memmap("data/patches.npy", mode="w+", dtype=np.uint8, shape=(3000, 4, 128, 128))
for s in range(0, 3000, 500):
    a[s:s + 500] = rng.integers(0, 256, (500, 4, 128, 128), dtype=np.uint8)
a.flush()
np.save("data/labels.npy", rng.integers(0, 10, 3000))
EOF2"""
SAT_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
          "train_sat.py")
SCENARIOS += [
    Scenario("b17_st_cache_enospc_preproc_r0", "pretrain_lm.py",
             f"{TR} 2 --tee 3 --master-port {{port}} pretrain_lm.py", setup=SCRATCH17,
             teardown="umount scratch; true"),
    Scenario("b17_st_accel_resume_trunc", "train_titles.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_titles.py "
             "--resume-from checkpoints/step_200", setup=TITLES17),
    Scenario("b17_cfg_resume_width_spawn", "train_basket.py",
             "python train_basket.py --nprocs 2 --port {port} --resume ckpt/basket-e12.pt", setup=BASKET17),
    # every process of the job SIGTERMed at once (the scheduler cancelling the allocation: scancel, pod deletion)
    Scenario("b17_inf_sigterm_all_scancel", "train_spk.py", f"{TR} 2 --master-port {{port}} train_spk.py",
             action=("kill_node", 0, signal.SIGTERM, "step 360/900")),
    Scenario("b17_hang_earlystop_local_ray", "train_fraud.py", "python train_fraud.py"),
    # from rank 2's step 200, rank 2 stopped 150 ms of every 250 ms (a noisy neighbour's throttling)
    Scenario("b17_slow_stopcont_r2_json", "train_prices.py", f"{TR} 3 --master-port {{port}} train_prices.py",
             action=("stopcont_until", 2, '"rank": 2, "event": "train", "step": 200,', None, 100, 150)),
    # from step 100 the job's cgroup gets 60 % of one core (the node's CPU limit lowered under the running pod)
    Scenario("b17_slow_trainer_quota_job", "train_intent.py", f"{TR} 2 --master-port {{port}} train_intent.py",
             action=("quota_until", "[rank 0] step 100/300", None, 60)),
    # node 1's rank's two DataLoader workers (the decoded-patch cache of each) in a 160 MiB memory cgroup
    Scenario("b17_oom_worker_cache_node1_twonode", "train_sat.py", SAT_2N.replace("{node}", "0"),
             cmd2=SAT_2N.replace("{node}", "1"), setup=PATCHES17,
             action=("worker_cgroup", 1, 160, "[node1 rank1] epoch 0 step 10/")),
]
# 1200 clips of 1.1-1.5 s at 16 kHz (int16); clip 568 (in rank 1's share of epoch 0) is 0.8 s long
CLIPS17 = r"""mkdir -p data/clips && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(11)
for i in range(1200):
    n = 12800 if i == 568 else int(rng.integers(17600, 24000))
    np.save(f"data/clips/clip_{i:05d}_{int(rng.integers(0, 20))}.npy",
            (rng.standard_normal(n) * 3000).astype(np.int16))
EOF2"""
CTR_2N = ("torchrun --nnodes 2 --node-rank {node} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
          "train_ctr.py")
SCENARIOS += [
    Scenario("b17_uc_randcrop_short_clip_spawn", "train_tagger.py",
             "python train_tagger.py --nprocs 2 --port {port}", setup=CLIPS17),
    # ranks pinned one per core; from node 1's step 1000 two busy processes of another tenant on rank 1's core
    Scenario("b17_slow_node1_pinhog_twonode", "train_ctr.py", CTR_2N.replace("{node}", "0"),
             cmd2=CTR_2N.replace("{node}", "1"), action=("pin_hogx", 1, "[node1 rank1] step 1000/", 2)),
]
# one gzip jsonl part per process (20,000 reviews each); part 1's download was interrupted at 45 % of its bytes
REVIEWS_GZ17 = r"""mkdir -p data && python - <<'EOF2'
import gzip, json, random, os
rng = random.Random(5)
words = "great bad slow fast love hate works broke cheap quality return refund size fit color late ok".split()
for k in range(2):
    p = f"data/reviews-{k:05d}.jsonl.gz"
    with gzip.open(p, "wt") as f:
        for _ in range(20000):
            f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(rng.randint(5, 40))),
                                "stars": rng.randint(1, 5)}) + "\n")
    if k == 1:
        raw = open(p, "rb").read()
        open(p, "wb").write(raw[: len(raw) * 45 // 100])
EOF2"""
SCENARIOS += [
    Scenario("b17_data_gzip_truncated_accel_r1", "train_reviews.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_reviews.py",
             setup=REVIEWS_GZ17),
]
# six exported parts per rank (2000 x 1024 float32 each); rank 1's parts 3-5 come from a re-run of the export job
# that wrote compressed .npz files
SENSOR_PARTS17 = r"""python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(9)
for r in range(3):
    os.makedirs(f"data/rank{r}", exist_ok=True)
    for k in range(6):
        x = np.round(rng.standard_normal((2000, 1024)), 2).astype(np.float32)
        if r == 1 and k >= 3:
            np.savez_compressed(f"data/rank{r}/part-{k}.npz", x=x)
        else:
            np.save(f"data/rank{r}/part-{k}.npy", x)
EOF2"""
SCENARIOS += [
    Scenario("b17_slow_data_npz_parts_r1", "train_sensors.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 "
             "train_sensors.py", setup=SENSOR_PARTS17),
]
SCENARIOS += [
    # at process 0's step 400 its established TCP connections are destroyed (ss -K: a link flap / a firewall
    # resetting the node's connections)
    Scenario("b17_net_conn_reset_accel_r0", "train_relevance.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_relevance.py",
             action=("ss_kill", 0, "[RANK 0] step 400/")),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 18 (ids b18_*): who-did-what failures (point-to-point order, a rank leaving early, uneven data, rank-0-only
# collectives, a rank blocked outside torch, a crash after training) and a few usual kinds in new shapes; recorded
# with ZOO_CGROUP_TAG=h95 ZOO_PORT_OFFSET=400 (other recorders share the host)
# an on-call engineer's three `py-spy dump`s of every rank, 4 s apart, `delay` s after the trigger line
PYSPY18 = r"""sleep @DELAY@
for s in 1 2 3; do
  mkdir -p dumps/snap$s
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'ZOO_RUN=@RUN@' || continue
    grep -q @SCRIPT@ $p/cmdline 2>/dev/null || continue
    r=$(tr '\0' '\n' < $p/environ 2>/dev/null | sed -n 's/^RANK=//p')
    [ -n "$r" ] || continue
    pp=$(awk '{print $4}' $p/stat)
    tr '\0' '\n' < /proc/$pp/environ 2>/dev/null | grep -qx "RANK=$r" && continue
    /work/main/.venv/bin/py-spy dump --pid $pid > dumps/snap$s/rank-$r.txt 2>&1
  done
  [ $s -lt 3 ] && sleep 4
done
true"""


def _pyspy18(run: str, script: str, delay: float) -> str:
    return PYSPY18.replace("@RUN@", run).replace("@SCRIPT@", script).replace("@DELAY@", str(delay))


# each rank's slice of the impression log (the slices are cut by day: rank 1's day had 3x the traffic)
IMPRESSIONS18 = r"""mkdir -p data && python - <<'EOF2'
import json, random
for r, n in ((0, 40000), (1, 120000)):
    rng = random.Random(r)
    with open(f"data/impressions-{r}.jsonl", "w") as f:
        for _ in range(n):
            ids = [rng.randrange(20000) for _ in range(12)]
            f.write(json.dumps({"ids": ids, "click": int(ids[0] % 7 == 0)}) + "\n")
EOF2"""
# two pre-split parts of hashed review features; part 0 has 1900 rows, part 1 2000 (the split job balanced by bytes)
REVIEW_PARTS18 = r"""mkdir -p data && python - <<'EOF2'
import json, random
for k, n in ((0, 1900), (1, 2000)):
    rng = random.Random(k)
    with open(f"data/train-part-{k}.jsonl", "w") as f:
        for _ in range(n):
            f.write(json.dumps({"h": [rng.randrange(65536) for _ in range(48)], "votes": rng.random() * 5}) + "\n")
EOF2"""
# two held-out files for the validation split (the job runs on 3 ranks)
VAL_FILES18 = r"""mkdir -p data/val && python - <<'EOF2'
import random
rng = random.Random(1)
for k in range(2):
    with open(f"data/val/heldout-{k:02d}.py.txt", "w") as f:
        for _ in range(4000):
            f.write("    " + " ".join(rng.choice(["x", "=", "self.", "return", "(", ")", "for", "in"]) for _ in range(8)) + "\n")
EOF2"""
# last quarter's encoder in the legacy export format (compressed npz, ~30 MB)
LEGACY18 = r"""mkdir -p legacy && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
np.savez_compressed("legacy/encoder_2026q3.npz", **{
    "0__weight": rng.standard_normal((30000, 256), dtype=np.float32),
    "1__weight": rng.standard_normal((256, 1024), dtype=np.float32), "1__bias": np.zeros(1024, np.float32),
    "3__weight": rng.standard_normal((1024, 256), dtype=np.float32), "3__bias": np.zeros(256, np.float32)})
EOF2"""
# three monthly exports; one row of the October export has churned = "N/A" (a join that found no CRM record)
ACCOUNTS18 = r"""mkdir -p exports && python - <<'EOF2'
import json, random
for k, m in enumerate(["2026-08", "2026-09", "2026-10"]):
    rng = random.Random(k)
    with open(f"exports/accounts-{m}.jsonl", "w") as f:
        for i in range(6000):
            r = {"account": f"A{k}{i:06d}", "logins_30d": rng.randint(0, 90), "tickets_30d": rng.randint(0, 6),
                 "spend_30d": round(rng.random() * 900, 2), "tenure_m": rng.randint(1, 80), "seats": rng.randint(1, 40),
                 "churned": int(rng.random() < 0.1)}
            if m == "2026-10" and i == 4321:
                r["churned"] = "N/A"
            f.write(json.dumps(r) + "\n")
EOF2"""
# the team's trainlib: the current one in the project, an old copy (0.3, before WarmupCosine) in the shared home
TRAINLIB18 = r"""mkdir -p tools && mv train_kws.py tools/ && python - <<'EOF2'
import os
cur, old = "trainlib", "nfs-home/src/trainlib"
for d in (cur, old):
    os.makedirs(d, exist_ok=True)
    open(f"{d}/__init__.py", "w").close()
    open(f"{d}/metrics.py", "w").write(
        "class RunningMean:\n    def __init__(self, m=0.98):\n        self.m, self.value = m, None\n\n"
        "    def update(self, x):\n        self.value = x if self.value is None else self.m * self.value + (1 - self.m) * x\n")
open(f"{cur}/sched.py", "w").write(
    "import math\n\nfrom torch.optim.lr_scheduler import LambdaLR\n\n\nclass WarmupCosine(LambdaLR):\n"
    "    def __init__(self, opt, warmup, total):\n"
    "        super().__init__(opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * "
    "(1 + math.cos(math.pi * min(s, total) / total)))\n")
open(f"{old}/sched.py", "w").write(
    "from torch.optim.lr_scheduler import LambdaLR\n\n\nclass LinearWarmup(LambdaLR):\n"
    "    def __init__(self, opt, warmup):\n        super().__init__(opt, lambda s: min(1.0, (s + 1) / warmup))\n")
EOF2"""
TOXIC_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id toxic-bert-0611 train_toxic.py")
SCENARIOS += [
    # rank 0's 1F1B warm-up count is computed from its own stage index (0) instead of num_stages - stage - 1:
    # both stages block in recv at the first training step; three py-spy dumps of both ranks
    Scenario("b18_hang_p2p_1f1b_warmup_tee", "train_pp.py", f"{TR} 2 --tee 3 --master-port {{port}} train_pp.py",
             action=("shell", "initial val loss", _pyspy18("b18_hang_p2p_1f1b_warmup_tee", "train_pp.py", 3))),
    # the operator touches STOP mid-run; each rank checks it on its own 5 s clock
    Scenario("b18_uc_stopfile_exit0_json_r0", "train_ctr.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 "
             "train_ctr.py", setup=IMPRESSIONS18, action=("shell", '"step": 600,', "touch STOP")),
    Scenario("b18_hang_uneven_parts_accel_r0", "train_helpful.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_helpful.py",
             setup=REVIEW_PARTS18),
    Scenario("b18_hang_rank0_barrier_branch_spawn", "train_forecast.py",
             "python train_forecast.py --nprocs 2 --port {port}"),
    Scenario("b18_uc_ray_rank0_samples_r0", "train_intent.py", "python train_intent.py"),
    Scenario("b18_uc_bincount_allreduce_logdir_r2", "train_landcover.py",
             f"{TR} 3 --master-port {{port}} --log-dir logs train_landcover.py"),
    # the job's stdin is a pipe nobody writes (the batch wrapper keeps it open); three py-spy dumps of every rank
    Scenario("b18_hang_wc_stdin_val_r2", "train_codelm.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} train_codelm.py",
             setup=VAL_FILES18, stdin_open=True,
             action=("shell", "[rank0] step 200/400", _pyspy18("b18_hang_wc_stdin_val_r2", "train_codelm.py", 3))),
    Scenario("b18_uc_barrier_after_destroy_exit", "train_tagger.py",
             f"{TR} 2 --master-port {{port}} train_tagger.py"),
    Scenario("b18_uc_init_ckpt_race_accel", "finetune_cls.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} finetune_cls.py",
             setup=LEGACY18),
    # rank 1's container has 700 MiB; the bigram table of a 1.5M-line shard needs more
    Scenario("b18_oom_ngram_vocab_spawn_r1", "build_and_train.py", "python build_and_train.py --port {port}",
             action=("cgroup", 1, 700)),
    # node 1's worker SIGKILLed from outside at epoch 0.64 (after the step-100 checkpoint); the job template sets
    # OMP_NUM_THREADS=1 (one process per node: torchrun leaves it unset)
    Scenario("b18_inf_sigkill_node1_trainer_c10d", "train_toxic.py", TOXIC_2N, cmd2=TOXIC_2N,
             env={"OMP_NUM_THREADS": "1"}, action=("kill", 1, signal.SIGKILL, "'epoch': '0.64'")),
    # the checkpoint volume has 40 MiB; each full checkpoint is ~19 MB
    Scenario("b18_st_enospc_rank0_save_logdir_r0", "train_recsys.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_recsys.py",
             setup="mkdir -p checkpoints && mount -t tmpfs -o size=40m tmpfs checkpoints && mkdir -p checkpoints/recsys",
             teardown="umount checkpoints; true"),
    Scenario("b18_data_label_na_redirects_r2", "train_churn.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --redirects 3 "
             "train_churn.py", setup=ACCOUNTS18),
    # the job template exports PYTHONPATH to an old trainlib checkout in the shared home
    Scenario("b18_cfg_pythonpath_old_lib", "train_kws.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} tools/train_kws.py",
             setup=TRAINLIB18, env={"PYTHONPATH": "/tmp/zoo/b18_cfg_pythonpath_old_lib/nfs-home/src"}),
]


# batch 19 (ids b19_*): platform-side failures (a network partition, a node's resolver, the store host's agent, a
# stalled or full volume, inodes, a node's memory and CPU limits, a scheduler's signals at different phases);
# recorded with ZOO_CGROUP_TAG=h98 ZOO_PORT_OFFSET=500 (other recorders share the host)
# node 1 cut off mid-run: every TCP port node 1's processes (agent and worker, found by --node-rank 1 / GROUP_RANK=1)
# hold is dropped on lo in both directions (iptables, a chain of this batch's own); the partition heals after 35 s
PARTITION19 = r"""iptables -N ZOO_B19 2>/dev/null; iptables -C INPUT -j ZOO_B19 2>/dev/null || iptables -I INPUT -j ZOO_B19
for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'ZOO_RUN=@RUN@' || continue
  if tr '\0' ' ' < $p/cmdline 2>/dev/null | grep -q -- '--node-rank 1' ||
     tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'GROUP_RANK=1'; then
    for lp in $(ss -tnpH | grep "pid=$pid," | awk '{print $4}' | sed 's/.*://'); do
      iptables -A ZOO_B19 -i lo -p tcp --dport $lp -j DROP
      iptables -A ZOO_B19 -i lo -p tcp --sport $lp -j DROP
    done
  fi
done
iptables -S ZOO_B19 | wc -l > partition_rules.txt
sleep 35
iptables -D INPUT -j ZOO_B19; iptables -F ZOO_B19; iptables -X ZOO_B19
true"""
UNPARTITION19 = "iptables -D INPUT -j ZOO_B19 2>/dev/null; iptables -F ZOO_B19 2>/dev/null; iptables -X ZOO_B19 2>/dev/null; true"
KWS_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
          "train_kws.py")
SCENARIOS += [
    Scenario("b19_net_partition_node1_twonode", "train_kws.py", KWS_2N.format(k=0), cmd2=KWS_2N.format(k=1),
             env={"OMP_NUM_THREADS": "1"},
             action=("shell", "[node1 rank1] step 400/", PARTITION19.replace("@RUN@", "b19_net_partition_node1_twonode")),
             teardown=UNPARTITION19),
]
# node 1's resolver view: its /etc/hosts (and no DNS) lacks the head node's name `vm`, which node 0 resolves
HOSTS19 = "printf '127.0.0.1 localhost\\n::1 localhost ip6-localhost\\n' > hosts.node1"
SENTI_2N = ("torchrun --nnodes 2 --nproc-per-node 2 --node-rank {k} --master-addr vm --master-port {{port}} "
            "--rdzv-conf timeout=30 train_sentiment.py")
SCENARIOS += [
    Scenario("b19_inf_dns_node1_twonode", "train_sentiment.py", SENTI_2N.format(k=0), cmd2=SENTI_2N.format(k=1),
             setup=HOSTS19, hosts2="hosts.node1", env={"OMP_NUM_THREADS": "1"}),
]
CTR_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
          "--rdzv-id ctr-0612 train_ctr.py")
SCENARIOS += [
    # node 0's torchrun agent (which hosts the c10d store) SIGKILLed at step 600; its worker left running
    Scenario("b19_inf_store_agent_killed_c10d", "train_ctr.py", CTR_2N, cmd2=CTR_2N, env={"OMP_NUM_THREADS": "1"},
             action=("kill_node_launcher", 0, signal.SIGKILL, '"step": 600,')),
]
# the shared checkpoint volume: ext4 on a loop device; from the step-250 line the filesystem is frozen (`fsfreeze`,
# the way a storage snapshot or failover holds a volume's writes) and thawed 38 s later
CKPTVOL19 = r"""truncate -s 96M ckptvol.img && LOOP=$(losetup -f --show ckptvol.img) && echo $LOOP > ckptvol.loop &&
mkfs.ext4 -q $LOOP && mkdir -p checkpoints && mount $LOOP checkpoints"""
CKPTVOL19_DOWN = r"""fsfreeze -u checkpoints 2>/dev/null; umount checkpoints
losetup -d $(cat ckptvol.loop); rm -f ckptvol.img; true"""
SCENARIOS += [
    Scenario("b19_hang_ckpt_volume_stall_r0", "train_ae.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_ae.py", setup=CKPTVOL19,
             teardown=CKPTVOL19_DOWN,
             action=("shell", "rank0: step 250 ", "fsfreeze -f checkpoints; sleep 38; fsfreeze -u checkpoints")),
]
# the node's scratch (TMPDIR=/tmp/scratch-n07, outside the work dir) is a 24 MiB tmpfs that other jobs' leftovers
# fill to 17 MB; the dataset archive unpacks to ~20 MB
TMPFULL19 = r"""mkdir -p /tmp/scratch-n07 data && mount -t tmpfs -o size=24m tmpfs /tmp/scratch-n07 &&
mkdir -p /tmp/scratch-n07/pip-build-x81 /tmp/scratch-n07/torchinductor_ci &&
head -c 9000000 /dev/urandom > /tmp/scratch-n07/pip-build-x81/wheel.tmp &&
head -c 8000000 /dev/urandom > /tmp/scratch-n07/torchinductor_ci/fxgraph.bin && python - <<'EOF2'
import io, os, random, tarfile
rng = random.Random(0)
with tarfile.open("data/newsgroups-v3.tar.gz", "w:gz") as tar:
    for k in range(40):
        raw = os.urandom(500_000)
        info = tarfile.TarInfo(f"shard-{k:03d}.bin")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
EOF2"""
SCENARIOS += [
    Scenario("b19_st_tmpdir_full_unpack_accel_r0", "finetune_news.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} finetune_news.py",
             setup=TMPFULL19, teardown="umount /tmp/scratch-n07; rmdir /tmp/scratch-n07; true",
             env={"TMPDIR": "/tmp/scratch-n07"}),
    # the feature cache is a node-local tmpfs with plenty of bytes but 8000 inodes
    Scenario("b19_st_inode_cache_spawn", "make_feats_and_train.py", "python make_feats_and_train.py --port {port}",
             setup="mkdir -p feat_cache && mount -t tmpfs -o size=256m,nr_inodes=8000 tmpfs feat_cache",
             teardown="umount feat_cache; true"),
    # rank 1's container memory limit is 700 MiB; the full-catalogue validation scores need more
    Scenario("b19_oom_eval_logits_cgroup_logdir_r1", "train_rec.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_rec.py", action=("cgroup", 1, 700)),
    # node 1 (agent and everything on it) SIGKILLed 2.5 s after it started, before it joined the rendezvous
    Scenario("b19_inf_sigkill_rdzv_node1_c10d", "train_prices.py",
             "torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id prices-77 --rdzv-conf join_timeout=20 train_prices.py",
             cmd2="torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id prices-77 --rdzv-conf join_timeout=20 train_prices.py",
             action=("kill_node", 1, signal.SIGKILL, 2.5)),
    # SIGTERM to the agent and every worker at once while rank 0 writes the step-300 checkpoint (a scheduler's
    # preemption)
    Scenario("b19_inf_sigterm_ckpt_save_all", "train_lm.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} train_lm.py",
             action=("kill_node", 0, signal.SIGTERM, "saving checkpoint ckpt/step_300.pt")),
]
KWSQ_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
           "train_kws_cnn.py")
# the time limit: SIGTERM to every process of the job, SIGKILL to what is left 6 s later (a batch system's grace period)
TIMELIMIT19 = r"""pids=$(for p in /proc/[0-9]*; do
  tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'ZOO_RUN=b19_inf_timelimit_grace_kill_spawn' && echo ${p#/proc/}
done)
kill -TERM $pids 2>/dev/null; sleep 6
kill -KILL $pids 2>/dev/null; true"""
SCENARIOS += [
    # from node 1's step 800 line its worker is held to 25 % of a core (the node's CPU quota lowered under the job)
    Scenario("b19_slow_quota_node1_twonode", "train_kws_cnn.py", KWSQ_2N.format(k=0), cmd2=KWSQ_2N.format(k=1),
             env={"OMP_NUM_THREADS": "1"}, action=("rank_quota", 1, "node1/rank1 | step 800/", 25)),
    Scenario("b19_inf_timelimit_grace_kill_spawn", "train_gnn.py", "python train_gnn.py --port {port}",
             action=("shell", "rank 1 step 1000 ", TIMELIMIT19)),
]
# the dataset volume's local gateway: an HTTP server over 2 x 200 chunk files, started by setup (it carries ZOO_RUN,
# so the recorder ends it with the run); from rank 0's step-200 line it is stopped 400 ms of every 500 ms (SIGSTOP /
# SIGCONT: the volume's I/O pausing), until the run ends
GATEWAY19 = r"""mkdir -p vol/clicks && python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for p in range(2):
    os.makedirs(f"vol/clicks/part-{p:02d}", exist_ok=True)
    for c in range(200):
        np.save(f"vol/clicks/part-{p:02d}/chunk-{c:04d}.npy", rng.random((256, 64), dtype=np.float32))
EOF2
echo '{"gateway": "http://127.0.0.1:{port_asset}"}' > volume.json
cd vol && (setsid python -m http.server {port_asset} --bind 127.0.0.1 > /dev/null 2>&1 & echo $! > ../gateway.pid) && sleep 1"""
GATEWAY19_STALL = r"""pid=$(cat gateway.pid)
while kill -STOP $pid 2>/dev/null; do sleep 0.4; kill -CONT $pid 2>/dev/null; sleep 0.1; done; true"""
SCENARIOS += [
    Scenario("b19_slow_st_gateway_stall_json", "train_clicks.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 "
             "train_clicks.py", setup=GATEWAY19,
             teardown="kill -CONT $(cat gateway.pid) 2>/dev/null; kill $(cat gateway.pid) 2>/dev/null; true",
             action=("shell", '"rank": 0, "step": 200,', GATEWAY19_STALL)),
]
SCENARIOS += [
    Scenario("b19_uc_trainer_metrics_tuple_tee", "train_topics.py",
             f"{TR} 2 --tee 3 --master-port {{port}} train_topics.py"),
]
SCENARIOS += [
    # Ray worker 1 (and the DataLoader processes it forks later) in a 300 MiB memory cgroup: the node's container
    # limit for that worker's share
    Scenario("b19_oom_ray_worker_cgroup_r1", "train_thumbs.py", "python train_thumbs.py", action=("ray_cgroup", 1, 300)),
]


# ---------------------------------------------------------------------------------------------------------------
# batch 20 (ids b20_*): the job's configuration and the frameworks it uses (DDP flags with activation checkpointing
# and an optional loss, FSDP's state-dict recipe on CPU, torch.compile of a DDP model, a launch script, a file://
# init on node-local disk, accelerate's default config, a Trainer argument, a CPU-only wheel, a resume after a model
# change, a per-node precision, a stale cache chunk, a cache race); recorded with ZOO_CGROUP_TAG=h103
# ZOO_PORT_OFFSET=300 (other recorders share the host)
# the multilingual experiment's config: the language-ID head's loss weight is 0 (the languages are balanced now)
INTENT_CFG20 = r"""mkdir -p configs && cat > configs/intent_multilingual.yaml <<'EOF2'
seed: 13
hidden: 256
batch_size: 64
lr: 1e-3
epochs: 2
aux_weight: 0.0
EOF2"""
# the team's launch script: one process per socket; RANK is computed from LOCAL_RANK, which is assigned after it
LAUNCHSH20 = r"""cat > launch.sh <<'EOF2'
#!/bin/bash
# launch.sh -- start NPROC training processes on this node (env:// rendezvous)
# usage: NNODES=.. NODE_RANK=.. MASTER_ADDR=.. MASTER_PORT=.. bash launch.sh [train args]
NPROC=${NPROC:-2}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-29500}
export WORLD_SIZE=$((NNODES * NPROC))
for i in $(seq 0 $((NPROC - 1))); do
  RANK=$((NODE_RANK * NPROC + LOCAL_RANK)) LOCAL_RANK=$i python train_ctc.py "$@" &
done
wait
EOF2"""
CIFAR_FILE_2N = ("python main.py --dist-url file://$PWD/scratch/rdzv_cifar100 --dist-backend gloo --world-size 2 "
                 "--rank {k} -b 64 --epochs 5")
# HF_HOME's accelerate/default_config.yaml was written by `accelerate config` for the GPU cluster's DeepSpeed jobs
ACCEL_DS20 = r"""mkdir -p hf_home/accelerate && cat > hf_home/accelerate/default_config.yaml <<'EOF2'
compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  gradient_accumulation_steps: 1
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: false
  zero_stage: 2
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_training_function: main
mixed_precision: bf16
num_machines: 1
num_processes: 8
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
EOF2"""
# a 7 MB corpus of forum posts (60,000 lines); no vocabulary cache yet
FORUM20 = r"""mkdir -p data && python - <<'EOF2'
import random
rng = random.Random(0)
syll = "ka lo mi ne ru ta shi po ve da gu ri fe zo ba".split()
words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) + (str(rng.randint(0, 99)) if rng.random() < 0.3
         else "") for _ in range(300000)]
with open("data/forum_posts.txt", "w") as f:
    for _ in range(60000):
        f.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 30))) + "\n")
EOF2"""
# the running experiment's epoch-4 checkpoint, written before the shared projection was added
RANKER20 = r"""mkdir -p ckpt && python - <<'EOF2' > /dev/null 2>&1
import torch
from train_ranker import VOCAB, Ranker
m = Ranker(shared_proj=False)
opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.01)
loss = m(torch.randint(0, VOCAB, (8, 8)), torch.randint(0, VOCAB, (8, 48))).sum()
loss.backward()
opt.step()
torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 4}, "ckpt/ranker-e4.pt")
EOF2"""
# pre-tokenized chunks, 4 per rank (800 pairs each, padded to 256); rank 2's chunk-0003 was left from the previous
# tokenize run, which padded code to 128 tokens
CODESEARCH20 = r"""python - <<'EOF2'
import os, torch
for r in range(3):
    os.makedirs(f"cache/shard-{r}", exist_ok=True)
    for c in range(4):
        g = torch.Generator().manual_seed(100 * r + c)
        n, L = 800, (128 if (r, c) == (2, 3) else 256)
        code = torch.randint(1, 16000, (n, L), generator=g)
        code[:, L // 2 :] = 0
        query = torch.randint(1, 16000, (n, 32), generator=g)
        torch.save({"code_ids": code, "query_ids": query}, f"cache/shard-{r}/chunk-{c:04d}.pt")
EOF2"""
CHURN_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
            "train_churn.py")
SCENARIOS += [
    Scenario("b20_cfg_ddp_ckpt_reentrant_ready_twice", "train_charlm.py",
             f"{TR} 2 --tee 3 --master-port {{port}} train_charlm.py --grad-ckpt --ctx 128 --layers 4"),
    Scenario("b20_cfg_aux_weight_zero_unused_accel", "train_intent.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_intent.py "
             "--config configs/intent_multilingual.yaml", setup=INTENT_CFG20),
    Scenario("b20_fw_fsdp1_cpu_offload_state_dict_r0", "train_fraud.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_fraud.py", env={"OMP_NUM_THREADS": "1"}),
    Scenario("b20_cfg_rank_collision_launchsh", "train_ctc.py", "NNODES=1 NODE_RANK=0 MASTER_PORT={port} bash launch.sh "
             "--epochs 3", setup=LAUNCHSH20, env={"OMP_NUM_THREADS": "1"}),
    # node 1 sees its own, empty scratch/ (node-local disk): the rendezvous file node 0 writes is not there
    Scenario("b20_cfg_file_init_nodelocal_twonode", "main.py", CIFAR_FILE_2N.format(k=0), cmd2=CIFAR_FILE_2N.format(k=1),
             setup="mkdir -p scratch", mask2="scratch", env={"OMP_NUM_THREADS": "1"}),
    Scenario("b20_cfg_hf_report_to_wandb", "run_sentiment.py",
             f"{TR} 2 --master-port {{port}} run_sentiment.py --output_dir out/sentiment-distil --use_cpu "
             "--ddp_backend gloo --ddp_timeout 20 --max_steps 300 --per_device_train_batch_size 32 --learning_rate 5e-4 "
             "--logging_steps 20 --save_steps 100 --report_to wandb --run_name sentiment-distil-v3"),
    Scenario("b20_cfg_accel_default_config_deepspeed", "finetune_titles.py",
             "accelerate launch --num_processes 2 --main_process_port {port} finetune_titles.py", setup=ACCEL_DS20,
             env={"HF_HOME": "/tmp/zoo/b20_cfg_accel_default_config_deepspeed/hf_home"}),
    Scenario("b20_fw_compile_ddp_fullgraph_spawn", "train_kws.py", "python train_kws.py --port {port} --compile --fullgraph"),
    Scenario("b20_uc_vocab_cache_race", "train_forumlm.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} train_forumlm.py", setup=FORUM20),
    Scenario("b20_cfg_ray_resume_optim_proj", "train_ranker.py", "python train_ranker.py", setup=RANKER20),
    Scenario("b20_cfg_cpu_wheel_set_device", "train_speechcmd.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --redirects 3 "
             "train_speechcmd.py"),
    # node 1's profile exports TRAIN_PRECISION=bf16 (left from the bf16 trial on that pool); node 0 has none
    Scenario("b20_cfg_bf16_env_node1_twonode", "train_churn.py", CHURN_2N.format(k=0), cmd2=CHURN_2N.format(k=1),
             env={"OMP_NUM_THREADS": "1"}, env2={"TRAIN_PRECISION": "bf16"}),
    Scenario("b20_data_stale_cache_chunk_r2", "train_codesearch.py",
             f"{TR} 3 --standalone train_codesearch.py", setup=CODESEARCH20, env={"OMP_NUM_THREADS": "1"}),
]
SCENARIOS += [
    # the job template restarts a failed group twice (--max-restarts 2)
    Scenario("b20_cfg_removed_pipe_api_restarts", "train_pipe_lm.py",
             f"{TR} 2 --max-restarts 2 --master-port {{port}} train_pipe_lm.py --chunks 4"),
]
SCENARIOS += [
    # the GPU pool's job template (one process per GPU), submitted to the CPU pool
    Scenario("b20_cfg_nproc_gpu_cpu_pool", "train_landcover.py",
             "torchrun --nnodes 1 --nproc-per-node gpu --master-port {port} --log-dir logs --tee 3 train_landcover.py"),
]
SCENARIOS += [
    # node 1's line of the job script runs the script with plain python (the launcher prefix was lost when the
    # command was split across two lines); node 0's agent waits for node 1 in the static rendezvous (timeout 20 s)
    Scenario("b20_cfg_node1_no_launcher_twonode", "train_tagger.py",
             "torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
             "--rdzv-conf timeout=20 train_tagger.py", cmd2="python train_tagger.py", env={"OMP_NUM_THREADS": "1"}),
]

# batch 21 (ids b21_*): the network between ranks and nodes (a shaped link, a lossy link, resets from a middlebox,
# a firewall at the rendezvous port and at gloo's own ports, a link cut during a checkpoint barrier, a flapping link,
# a wrong interface, an address the other node cannot reach); recorded with ZOO_CGROUP_TAG=h107 ZOO_PORT_OFFSET=400
# (other recorders share the host). Node 1 is the network namespace zoo21_n1 (its own interfaces, iptables and
# qdiscs); the data link between the nodes is a veth pair eth1 (10.88.0.1 on node 0 = this host, 10.88.0.2 on node 1).
# This kernel has no netem qdisc (no delay or jitter); loss is an iptables `statistic` match, a rate limit is tbf.
NET21 = ("ip netns del zoo21_n1 2>/dev/null; ip link del eth1 2>/dev/null; ip netns add zoo21_n1 && "
         "ip link add eth1 type veth peer name zoo21p && ip link set zoo21p netns zoo21_n1 && "
         "ip netns exec zoo21_n1 ip link set zoo21p name eth1 && ip addr add 10.88.0.1/24 dev eth1 && "
         "ip link set eth1 up && ip netns exec zoo21_n1 ip addr add 10.88.0.2/24 dev eth1 && "
         "ip netns exec zoo21_n1 ip link set eth1 up && ip netns exec zoo21_n1 ip link set lo up")
NET21_DOWN = ("ip netns del zoo21_n1 2>/dev/null; ip link del eth1 2>/dev/null; ip link del mgmt0 2>/dev/null; "
              "iptables -D INPUT -j ZOO_B21 2>/dev/null; iptables -D INPUT -i eth1 -j ZOO_B21 2>/dev/null; "
              "iptables -D OUTPUT -o eth1 -j ZOO_B21 2>/dev/null; iptables -F ZOO_B21 2>/dev/null; "
              "iptables -X ZOO_B21 2>/dev/null; true")
N1 = "ip netns exec zoo21_n1"
ENV21 = {"OMP_NUM_THREADS": "1"}


def _two21(sid: str, file: str, cmd: str, **kw) -> Scenario:
    """A two-node scenario of batch 21: node 1 in the namespace; cmd has {k} for the node rank."""
    kw.setdefault("setup", NET21)
    return Scenario(sid, file, cmd.format(k=0), cmd2=cmd.format(k=1), netns2="zoo21_n1", teardown=NET21_DOWN,
                    env=dict(ENV21), **kw)


# a cut of node 1's side of the link (both directions), for `secs` seconds, by a process the recorder ends with the run
def _cut21(run: str, plan: str) -> str:
    return (f"env ZOO_RUN={run} bash -c 'N=\"{N1} iptables\"; cut() {{ $N -A INPUT -i eth1 -j DROP; "
            f"$N -A OUTPUT -o eth1 -j DROP; }}; heal() {{ $N -F INPUT; $N -F OUTPUT; }}; {plan}'")


TBF21 = ("tc qdisc add dev eth1 root tbf rate 3gbit burst 512kb latency 20ms && "
         f"{N1} tc qdisc add dev eth1 root tbf rate 3gbit burst 512kb latency 20ms")
LOSS21 = (f"{N1} iptables -A INPUT -i eth1 -m statistic --mode random --probability 0.03 -j DROP && "
          f"{N1} iptables -A OUTPUT -o eth1 -m statistic --mode random --probability 0.03 -j DROP")
# node 0's host firewall on the data interface: established flows and the job's rendezvous port (MASTER_PORT) come
# in, everything else is rejected as the RHEL/CentOS default rule set does (icmp-host-prohibited) (a chain of this
# batch's own, only for eth1)
FW21 = NET21 + (" && iptables -N ZOO_B21 && iptables -I INPUT -i eth1 -j ZOO_B21 && "
                "iptables -A ZOO_B21 -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT && "
                "iptables -A ZOO_B21 -p tcp --dport {port} -j ACCEPT && iptables -A ZOO_B21 -p tcp --dport 22 -j ACCEPT && "
                "iptables -A ZOO_B21 -j REJECT --reject-with icmp-host-prohibited")
# Ray worker 1's gloo connection to worker 0 rejected with TCP resets by a firewall rule on the host, in both
# directions (so the resets themselves are rejected too: the pair goes silent)
RAYRST21 = r"""python - <<'EOF'
import re, subprocess
con = open("console.log", errors="replace").read()
pid = {r: re.search(rf"pid=(\d+)\) world_rank={r},", con).group(1) for r in (0, 1)}
ss = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout.splitlines()
def ports(p):
    return {l.split()[3].rsplit(":", 1)[1] for l in ss if f"pid={p}," in l}
mine = [l.split() for l in ss if f"pid={pid[1]}," in l]
peer0 = ports(pid[0])
sh = "iptables -N ZOO_B21 2>/dev/null; iptables -C INPUT -j ZOO_B21 2>/dev/null || iptables -I INPUT -j ZOO_B21\n"
for f in mine:
    lp, pp = f[3].rsplit(":", 1)[1], f[4].rsplit(":", 1)[1]
    if pp in peer0:
        sh += f"iptables -A ZOO_B21 -i lo -p tcp --dport {lp} -j REJECT --reject-with tcp-reset\n"
        sh += f"iptables -A ZOO_B21 -i lo -p tcp --sport {lp} -j REJECT --reject-with tcp-reset\n"
subprocess.run(["bash", "-c", sh])
open("rst_rules.txt", "w").write(sh)
EOF"""
SCENARIOS += [
    _two21("b21_slow_net_tbf_twonode", "train_intent.py",
           "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.88.0.1 "
           "--master-port {{port}} train_intent.py", action=("shell", "[rank0] step 300/", TBF21)),
    _two21("b21_slow_net_loss_accel_node1", "tag_titles.py",
           "GLOO_SOCKET_IFNAME=eth1 accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
           "--main_process_ip 10.88.0.1 --main_process_port {{port}} tag_titles.py", action=("shell", "epoch 1:", LOSS21)),
    _two21("b21_hang_rdzv_port_reset_twonode", "train_kws.py",
           "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.88.0.1 "
           "--master-port {{port}} --rdzv-conf timeout=20 train_kws.py",
           setup=NET21 + f" && {N1} iptables -A OUTPUT -o eth1 -p tcp --dport {{port}} -j REJECT --reject-with tcp-reset"),
    _two21("b21_hang_gloo_ports_fw_node0", "train_retrieval.py",
           "GLOO_SOCKET_IFNAME=eth1 python train_retrieval.py --nnodes 2 --node-rank {k} --master-addr 10.88.0.1 "
           "--master-port {{port}}", setup=FW21,
           # node 0 prints nothing more for 40 s: the user presses Ctrl-C in its terminal, and again 4 s later
           # (SIGINT to the node's foreground processes: the spawn parent and its child)
           action=("shell", 40, "for i in 1 2; do for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | "
                   "grep -qx 'ZOO_RUN=b21_hang_gloo_ports_fw_node0' && kill -INT ${p#/proc/}; done; sleep 4; done; true")),
    Scenario("b21_hang_ckpt_barrier_cut_twonode", "train_ae.py",
             "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 10.88.0.1 "
             "--master-port {port} --log-dir logs --tee 3 train_ae.py",
             cmd2="GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 10.88.0.1 "
             "--master-port {port} train_ae.py", netns2="zoo21_n1", setup=NET21, teardown=NET21_DOWN, env=dict(ENV21),
             action=("shell", "saving checkpoint ckpt/step_000300.pt",
                     _cut21("b21_hang_ckpt_barrier_cut_twonode", "cut; sleep 80"))),
    _two21("b21_hang_link_flap_envinit_twonode", "train_sensor.py",
           "RANK={k} WORLD_SIZE=2 MASTER_ADDR=10.88.0.1 MASTER_PORT={{port}} GLOO_SOCKET_IFNAME=eth1 python train_sensor.py",
           action=("shell", "rank 0 step 300/", _cut21("b21_hang_link_flap_envinit_twonode",
                                                       "cut; sleep 6; heal; sleep 10; cut; sleep 80"))),
    _two21("b21_net_reset_midtrain_twonode", "train_topics.py",
           "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.88.0.1 "
           "--master-port {{port}} train_topics.py",
           action=("shell", "step 500: loss", f"{N1} iptables -A INPUT -i eth1 -p tcp -j REJECT --reject-with tcp-reset")),
    Scenario("b21_cfg_gloo_ifname_down_node1", "train_ctr.py",
             "GLOO_SOCKET_IFNAME=eth1 python -m torch.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 1 "
             "--master-addr 10.88.0.1 --master-port {port} train_ctr.py",
             cmd2="GLOO_SOCKET_IFNAME=eth2 python -m torch.distributed.run --nnodes 2 --node-rank 1 --nproc-per-node 1 "
             "--master-addr 10.88.0.1 --master-port {port} train_ctr.py", netns2="zoo21_n1",
             setup=NET21 + f" && {N1} ip link add eth2 type veth peer name eth2p", teardown=NET21_DOWN, env=dict(ENV21)),
    _two21("b21_cfg_main_ip_mgmt_accel_twonode", "train_reviews.py",
           "GLOO_SOCKET_IFNAME=eth1 accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
           "--main_process_ip 10.0.5.1 --main_process_port {{port}} --rdzv_conf timeout=20 train_reviews.py",
           setup=NET21 + (" && ip link add mgmt0 type veth peer name mgmt0p && ip addr add 10.0.5.1/24 dev mgmt0 && "
                          "ip link set mgmt0p up && ip link set mgmt0 up"
                          f" && {N1} ip route add default via 10.88.0.1 && {N1} iptables -A OUTPUT -d 10.0.5.0/24 -j DROP")),
    _two21("b21_slow_link_flap_trainer_twonode", "run_tickets.py",
           "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.88.0.1 "
           "--master-port {{port}} run_tickets.py",
           action=("shell", "'epoch': '0.16'", _cut21("b21_slow_link_flap_trainer_twonode",
                                                  "for i in $(seq 30); do cut; sleep 1; heal; sleep 3; done"))),
    Scenario("b21_hang_ray_fw_pair", "train_churn.py", "python train_churn.py",
             action=("shell", "iter 1000/3000", RAYRST21), teardown=NET21_DOWN),
]
# the head node's NIC starts losing 20 % of the packets it sends on the data link (a chain of this batch's own)
LOSSOUT21 = ("iptables -N ZOO_B21 2>/dev/null; iptables -I OUTPUT -o eth1 -j ZOO_B21 && "
             "iptables -A ZOO_B21 -m statistic --mode random --probability 0.2 -j DROP")
SCENARIOS += [
    Scenario("b21_hang_oneway_rx_node1", "train_proj.py",
             "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr 10.88.0.1 "
             "--master-port {port} --log-dir logs --redirects 3 train_proj.py",
             cmd2="GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank 1 --nproc-per-node 1 --master-addr 10.88.0.1 "
             "--master-port {port} train_proj.py", netns2="zoo21_n1", setup=NET21, teardown=NET21_DOWN, env=dict(ENV21),
             # node 1 stops receiving on the data link (its port's receive side fails); it can still send
             action=("shell", "INFO:__main__:step 300/", f"{N1} iptables -A INPUT -i eth1 -j DROP")),
    _two21("b21_slow_net_loss_head_spawn", "train_spk.py",
           "GLOO_SOCKET_IFNAME=eth1 python train_spk.py --nnodes 2 --node-rank {k} --master-addr 10.88.0.1 "
           "--master-port {{port}}", action=("shell", "step 240/600", LOSSOUT21)),
]
# node 1's data port came up without an address (its DHCP lease on the data network never arrived); the rendezvous
# goes over the management network (mgmt0: 10.0.5.1 on node 0, 10.0.5.2 on node 1), the collectives over eth1
NOADDR21 = ("ip netns del zoo21_n1 2>/dev/null; ip link del eth1 2>/dev/null; ip link del mgmt0 2>/dev/null; "
            "ip netns add zoo21_n1 && ip link add eth1 type veth peer name zoo21p && ip link set zoo21p netns zoo21_n1 && "
            f"{N1} ip link set zoo21p name eth1 && ip addr add 10.88.0.1/24 dev eth1 && ip link set eth1 up && "
            f"{N1} ip link set eth1 up && {N1} ip link set lo up && "
            "ip link add mgmt0 type veth peer name zoo21m && ip link set zoo21m netns zoo21_n1 && "
            f"{N1} ip link set zoo21m name mgmt0 && ip addr add 10.0.5.1/24 dev mgmt0 && ip link set mgmt0 up && "
            f"{N1} ip addr add 10.0.5.2/24 dev mgmt0 && {N1} ip link set mgmt0 up")
SCENARIOS += [
    _two21("b21_inf_data_nic_noaddr_node1", "train_forecast.py",
           "GLOO_SOCKET_IFNAME=eth1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.0.5.1 "
           "--master-port {{port}} --rdzv-conf timeout=20 train_forecast.py", setup=NOADDR21),
]
# the link between the nodes degrades in steps (both ends, tbf): 2 Gbit/s, then 200 Mbit/s, then 512 kbit/s
DEGRADE21 = ("env ZOO_RUN=b21_hang_link_degrading_twonode bash -c 'for r in 2gbit 200mbit 512kbit; do "
             "tc qdisc replace dev eth1 root tbf rate $r burst 256kb latency 50ms; "
             f"{N1} tc qdisc replace dev eth1 root tbf rate $r burst 256kb latency 50ms; sleep 4; done; sleep 14; "
             # no line for ~18 s: the user presses Ctrl-C in both terminals (SIGINT to each node's torchrun agent)
             "for p in /proc/[0-9]*; do tr \"\\\\0\" \" \" < $p/cmdline 2>/dev/null | grep -q distributed[.]run.--nnodes && "
             "tr \"\\\\0\" \"\\\\n\" < $p/environ 2>/dev/null | grep -qx ZOO_RUN=b21_hang_link_degrading_twonode && "
             "kill -INT ${p#/proc/}; done; sleep 80'")
SCENARIOS += [
    _two21("b21_hang_link_degrading_twonode", "train_langid.py",
           "GLOO_SOCKET_IFNAME=eth1 python -m torch.distributed.run --nnodes 2 --node-rank {k} --nproc-per-node 1 "
           "--master-addr 10.88.0.1 --master-port {{port}} train_langid.py",
           action=("shell", "rank0: step 200/2000", DEGRADE21)),
]

# ---------------------------------------------------------------------------------------------------------------
# batch 22 (ids b22_*): the common weekly failures again (an OOM kill in evaluation, signals from outside during a
# checkpoint save and an evaluation, a collate bug, a read-only checkpoint volume under DCP, a wrong-shaped part, a
# per-node argument, a resume path that is not there, a straggler, a slow loader), in launch shapes and layouts
# earlier batches used little; recorded with ZOO_CGROUP_TAG=b22 ZOO_PORT_OFFSET=300 (another recorder shares the host)
ENV22 = {"OMP_NUM_THREADS": "1"}
# support tickets: 5-60 words; three pasted e-mail threads of 70-180 words among 6000
TICKETS22 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(7)
words = [f"w{i}" for i in range(5000)]
long_at = {1733, 3410, 5127}
with open("data/tickets_train.jsonl", "w") as f:
    for i in range(6000):
        n = rng.randint(70, 180) if i in long_at else rng.randint(5, 60)
        f.write(json.dumps({"id": f"T{100000 + i}", "text": " ".join(rng.choice(words) for _ in range(n)),
                            "intent": rng.randrange(24)}) + "\n")
EOF2"""
# per-rank feature parts (rows x 48); rank 2's part was exported by the new feature job, which writes features x rows
CHURN22 = r"""mkdir -p features && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
for r in range(3):
    x = rng.standard_normal((3000, 48)).astype(np.float32)
    np.save(f"features/part-{r}.npy", x.T.copy() if r == 2 else x)
    np.save(f"features/part-{r}.labels.npy", (rng.random(3000) < 0.2).astype(np.int64))
EOF2"""
CKPT22 = ("mkdir -p /mnt/ckpt22 && (mountpoint -q /mnt/ckpt22 && umount /mnt/ckpt22 || true) && "
          "mount -t tmpfs -o size=64m tmpfs /mnt/ckpt22")
KWS22_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
            "train_kws.py --micro-batch 32 --grad-accum {acc}")
# the output directory the requeued job resumes from: checkpoint-1000 only (save_total_limit rotated the others)
HEADLINES22 = ("mkdir -p out/headline-bert/checkpoint-1000 && "
               """echo '{"global_step": 1000}' > out/headline-bert/checkpoint-1000/trainer_state.json""")
SCENARIOS += [
    # process 1's container memory limit is 700 MiB; the validation pass keeps every batch's softmax
    Scenario("b22_oom_accel_eval_preds_r1", "train_catclf.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_catclf.py",
             env=dict(ENV22), action=("cgroup", 1, 700)),
    Scenario("b22_uc_collate_pad_no_trunc_spawn", "train_intent.py", "python train_intent.py --port {port}",
             setup=TICKETS22, env=dict(ENV22)),
    # the checkpoint volume is remounted read-only (a storage failover) after the step-200 save
    Scenario("b22_st_dcp_readonly_remount", "train_ner.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_ner.py",
             setup=CKPT22, teardown="umount /mnt/ckpt22; rmdir /mnt/ckpt22; true", env=dict(ENV22),
             action=("shell", "saved checkpoint /mnt/ckpt22/ner-gru/step_000200", "mount -o remount,ro /mnt/ckpt22")),
    Scenario("b22_data_npy_transposed_r2", "train_churn.py",
             "torchrun --nnodes 1 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint localhost:{port} train_churn.py",
             setup=CHURN22, env=dict(ENV22)),
    # node 1's job line still carries the old --grad-accum 2 (node 0: 4)
    Scenario("b22_cfg_grad_accum_node1_twonode", "train_kws.py", KWS22_2N.format(k=0, acc=4),
             cmd2=KWS22_2N.format(k=1, acc=2), env=dict(ENV22)),
    # rank 0 SIGKILLed from outside while it evaluates after epoch 1
    Scenario("b22_inf_sigkill_spawn_eval_r0", "train_fraud.py", "python train_fraud.py --port {port}",
             env=dict(ENV22), action=("kill", 0, signal.SIGKILL, "[rank 0] epoch 1: evaluating")),
    # SIGTERM to the launcher as the Trainer writes checkpoint-50 (a preemption)
    Scenario("b22_inf_sigterm_trainer_save", "run_clm.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 run_clm.py --output_dir out/desc-gpt2 "
             "--per_device_train_batch_size 8 --max_steps 200 --save_steps 25 --logging_steps 10 --learning_rate 3e-4 "
             "--use_cpu --ddp_backend gloo --ddp_timeout 20 --report_to none --log_level info",
             env=dict(ENV22), action=("kill_launcher", signal.SIGTERM,
                                      "Saving model checkpoint to out/desc-gpt2/checkpoint-50")),
    Scenario("b22_cfg_hf_resume_missing_ckpt_accel", "run_headlines.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} run_headlines.py "
             "--output_dir out/headline-bert --resume_from_checkpoint out/headline-bert/checkpoint-1500 "
             "--per_device_train_batch_size 32 --max_steps 2000 --save_steps 500 --save_total_limit 1 "
             "--use_cpu --ddp_backend gloo --report_to none", setup=HEADLINES22, env=dict(ENV22)),
    # from process 1's step-200 line, process 1 is stopped 90 ms of every 150 ms (a throttled node) until the end
    Scenario("b22_slow_stopcont_accel_r1", "train_ctr.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_ctr.py",
             env=dict(ENV22), action=("stopcont_until", 1, "[rank 1] step 200/", None, 60, 90)),
    # worker 0 SIGTERMed (a node drain) as it writes its epoch-1 checkpoint
    Scenario("b22_inf_sigterm_ray_ckpt_r0", "train_loganomaly.py", "python train_loganomaly.py", env=dict(ENV22),
             action=("ray_kill", 0, signal.SIGTERM, "[rank 0] epoch 1 done")),
]
# two machines: node 0 is this host, node 1 the network namespace zoo22_n1; the data link is a veth pair eth1
# (10.88.0.1 / 10.88.0.2), as batch 21's, under a namespace name of this batch's own
NET22 = ("ip netns del zoo22_n1 2>/dev/null; ip link del eth1 2>/dev/null; ip netns add zoo22_n1 && "
         "ip link add eth1 type veth peer name zoo22p && ip link set zoo22p netns zoo22_n1 && "
         "ip netns exec zoo22_n1 ip link set zoo22p name eth1 && ip addr add 10.88.0.1/24 dev eth1 && "
         "ip link set eth1 up && ip netns exec zoo22_n1 ip addr add 10.88.0.2/24 dev eth1 && "
         "ip netns exec zoo22_n1 ip link set eth1 up && ip netns exec zoo22_n1 ip link set lo up")
NET22_DOWN = "ip netns del zoo22_n1 2>/dev/null; ip link del eth1 2>/dev/null; true"
ACC22_2N = ("GLOO_SOCKET_IFNAME=eth1 accelerate launch --multi_gpu --num_machines 2 --num_processes 2{mr} "
            "--main_process_ip 10.88.0.1 --main_process_port {{port}} --rdzv_conf timeout=20 train_helpful.py")
LATE22_2N = ("python -m torch.distributed.run --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 "
             "--master-port {{port}} --rdzv-conf timeout=15 train_basket.py")
SCENARIOS += [
    # node 1's line of the job script lost its --machine_rank 1 (accelerate's default is 0)
    Scenario("b22_cfg_accel_machine_rank_missing_twonode", "train_helpful.py",
             ACC22_2N.format(mr=" --machine_rank 0"), cmd2=ACC22_2N.format(mr=""), netns2="zoo22_n1", setup=NET22,
             teardown=NET22_DOWN, env=dict(ENV22)),
    # node 1 comes up 17 s after node 0 (its container image was still being pulled)
    Scenario("b22_inf_node1_late_static", "train_basket.py", LATE22_2N.format(k=0), cmd2=LATE22_2N.format(k=1),
             cmd2_delay_s=17.0, env=dict(ENV22)),
]
# the embedding export: 200 batches per part; worker 1's second part came from the new export tool, which writes
# JSON lines (4 decimals) instead of .npy
EMB22 = r"""python - <<'EOF2'
import json, os
import numpy as np
rng = np.random.default_rng(0)
for w in range(2):
    os.makedirs(f"emb/worker-{w}", exist_ok=True)
    for p in range(2):
        x = rng.standard_normal((200 * 64, 1024)).astype(np.float32)
        if w == 1 and p == 1:
            with open(f"emb/worker-{w}/part-{p:03d}.jsonl", "w") as f:
                for i, row in enumerate(x):
                    f.write(json.dumps({"q": f"q{w}{p}{i:06d}", "emb": [round(float(v), 4) for v in row]}) + "\n")
        else:
            np.save(f"emb/worker-{w}/part-{p:03d}.npy", x)
EOF2"""
SCENARIOS += [
    Scenario("b22_slow_data_ray_jsonpart_r1", "train_query_intent.py", "python train_query_intent.py", setup=EMB22,
             env={**ENV22, "RAY_DEDUP_LOGS": "0"}),
]
# the pre-trained checkpoint as the research cluster exported it (dcp.save from one process), copied here by a
# transfer that was cut off: its one data file holds 55 % of its bytes, .metadata is complete
SER22 = r"""mkdir -p pretrained && RANK=0 python - <<'EOF2' > /dev/null 2>&1
import os, torch.distributed.checkpoint as dcp
from train_ser import SER
dcp.save({"model": SER().state_dict()}, checkpoint_id="pretrained/ser-base-dcp")
p = "pretrained/ser-base-dcp/__0_0.distcp"
raw = open(p, "rb").read()
open(p, "wb").write(raw[: int(len(raw) * 0.55)])
EOF2"""
# six parts in the manifest (3 epochs x 2 workers); the sync from object storage never brought part-00003 (worker 1's
# epoch-1 part)
STS22 = r"""mkdir -p data/sts && python - <<'EOF2'
import json, torch
parts = [f"pairs-{k:05d}.pt" for k in range(6)]
for k, name in enumerate(parts):
    if k == 3:
        continue
    g = torch.Generator().manual_seed(k)
    torch.save({"a": torch.randint(0, 16000, (4096, 24), generator=g), "b": torch.randint(0, 16000, (4096, 24), generator=g),
                "score": torch.rand(4096, generator=g)}, f"data/sts/{name}")
json.dump({"name": "sts-pairs-v3", "parts": parts}, open("data/sts/manifest.json", "w"))
EOF2"""
SCENARIOS += [
    Scenario("b22_st_dcp_resume_trunc_shard", "train_ser.py", f"{TR} 3 --standalone train_ser.py", setup=SER22,
             env=dict(ENV22)),
    Scenario("b22_data_missing_part_ray_r1", "train_sts.py", "python train_sts.py", setup=STS22, env=dict(ENV22)),
]
SCENARIOS += [
    # as epoch 1's training ends, rank 1 (and its threads) is held to 1 % of a core: its pod's CPU limit lowered in
    # place under the running job (a vertical autoscaler's resize)
    Scenario("b22_hang_cpu_limit_r1", "train_iqa.py", f"{TR} 3 --master-port {{port}} train_iqa.py", env=dict(ENV22),
             action=("rank_quota", 1, "epoch 1: 100%", 1)),
]
# batch 23 (ids b23_*): the common weekly failures once more (an OOM kill in a gather, SIGKILL / SIGTERM from outside
# during a worker's data preparation and a DCP save, an inf in one rank's export, a model size that differs between
# nodes, a world size typed on the command line, a rendezvous endpoint of localhost on one node, a pipe deadlock in
# data preparation, node-local scratch that is full, a straggler under the Trainer, a busy host), in launch shapes and
# layouts earlier batches used little; recorded with ZOO_CGROUP_TAG=b23 ZOO_PORT_OFFSET=400 (another recorder shares the
# host)
ENV23 = {"OMP_NUM_THREADS": "1"}
# per-plant sensor exports, 6000 rows x 20 features; plant 2's export computes flow_rate_per_min over a duration that
# is 0 for four rows after a sensor reset, and writes them as inf
PLANT23 = r"""mkdir -p data && python - <<'EOF2'
import csv, random
cols = [f"s{k:02d}" for k in range(19)] + ["flow_rate_per_min"]
for r in range(3):
    rng = random.Random(r)
    with open(f"data/plant-{r}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["ts", *cols, "target"])
        for i in range(6000):
            row = [f"{rng.gauss(0, 1):.4f}" for _ in cols]
            if r == 2 and 2100 <= i < 2104:
                row[-1] = "inf"
            w.writerow([1733000000 + 60 * i, *row, f"{rng.random():.4f}"])
EOF2"""
# the team's subword tool and the two parts of the parallel corpus (part 1 is the bigger one)
MT23 = r"""mkdir -p data tools spm && echo 'trained sentencepiece model (stand-in)' > spm/deen-8k.model
cat > tools/spm_encode.py <<'EOF2'
import argparse, random, sys, zlib
ap = argparse.ArgumentParser()
ap.add_argument("--model")
ap.add_argument("path")
a = ap.parse_args()
for line in open(a.path):
    rng = random.Random(zlib.crc32(line.encode()))
    print(" ".join(str(rng.randrange(1, 8000)) for _ in line.split()))
EOF2
python - <<'EOF2'
import random
rng = random.Random(3)
words = [f"wort{i}" for i in range(3000)]
for p, n in ((0, 400), (1, 5000)):
    with open(f"data/wmt-deen.part-{p}.txt", "w") as f:
        for _ in range(n):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(8, 30))) + "\n")
EOF2"""
DCP23_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
            "train_lm.py --ckpt-dir ckpt/lm-small --save-every 100")
KWS23_2N = ("python -m torch.distributed.run --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 "
            "--master-port {{port}} train_kws.py --d-model {d} --layers 4")
AE23_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
           "train_ae.py --scratch scratch --save-every 150")
# node 1 as its own machine: the network namespace zoo23_n1, linked to this host by a veth pair (10.123.0.1 here,
# 10.123.0.2 there; both ends named eth1 from each side's view, the host side z23h)
NET23 = ("ip netns del zoo23_n1 2>/dev/null; ip link del z23h 2>/dev/null; ip netns add zoo23_n1 && "
         "ip link add z23h type veth peer name z23p && ip link set z23p netns zoo23_n1 && "
         "ip netns exec zoo23_n1 ip link set z23p name eth1 && ip addr add 10.123.0.1/24 dev z23h && "
         "ip link set z23h up && ip netns exec zoo23_n1 ip addr add 10.123.0.2/24 dev eth1 && "
         "ip netns exec zoo23_n1 ip link set eth1 up && ip netns exec zoo23_n1 ip link set lo up")
NET23_DOWN = "ip netns del zoo23_n1 2>/dev/null; ip link del z23h 2>/dev/null; true"
SEG23_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint {ep}:{{port}} --rdzv-id seg-r7 "
            "--rdzv-conf join_timeout=20 train_seg.py")
SCENARIOS += [
    # rank 0's container memory limit is 760 MiB; after epoch 0 it gathers every rank's passage embeddings
    Scenario("b23_oom_gather_redirects_r0", "train_retriever.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --redirects 3 train_retriever.py", env=dict(ENV23),
             action=("cgroup", 0, 760)),
    # worker 1 SIGKILLed from outside while it builds its vocabulary, before its first collective
    Scenario("b23_inf_ray_sigkill_init_r1", "train_rating.py", "python train_rating.py",
             env={**ENV23, "RAY_DEDUP_LOGS": "0"}, action=("ray_kill", 1, signal.SIGKILL, "[rank 1] vocab: 200000/800000")),
    # node 1's agent SIGTERMed (a spot reclaim) as rank 0 announces the step-200 checkpoint
    Scenario("b23_inf_sigterm_node1_dcp_save_twonode", "train_lm.py", DCP23_2N.format(k=0),
             cmd2=DCP23_2N.format(k=1), env=dict(ENV23),
             action=("kill_node_launcher", 1, signal.SIGTERM, "saving checkpoint to ckpt/lm-small/step_000200")),
    Scenario("b23_data_inf_feature_guard_r2", "train_plant.py", "python train_plant.py --port {port}",
             setup=PLANT23, env=dict(ENV23)),
    # node 1's job line still has the old --d-model 384 (node 0: 512)
    Scenario("b23_cfg_dmodel_node1_twonode", "train_kws.py", KWS23_2N.format(k=0, d=512),
             cmd2=KWS23_2N.format(k=1, d=384), env=dict(ENV23)),
    # the 2-process job line's --world-size 2 kept when the job moved to 4 processes
    Scenario("b23_cfg_sampler_world_size_arg", "train_topics.py",
             f"{TR} 4 --standalone train_topics.py --world-size 2 --batch-size 64", env=dict(ENV23)),
    # node 1's line copies the single-node example's --rdzv-endpoint localhost
    Scenario("b23_cfg_rdzv_localhost_node1", "train_seg.py", SEG23_2N.format(ep="vm"),
             cmd2=SEG23_2N.format(ep="localhost"), netns2="zoo23_n1", setup=NET23, teardown=NET23_DOWN,
             env=dict(ENV23)),
    Scenario("b23_hang_popen_wait_accel_r1", "train_mt.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_mt.py", setup=MT23,
             env=dict(ENV23)),
    # from the Trainer's step-200 log line, rank 1 stopped 60 ms of every 100 ms (SIGSTOP/SIGCONT, a throttled node)
    Scenario("b23_slow_stopcont_trainer_logdir_r1", "run_chat_clm.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 run_chat_clm.py --output_dir out/chat-gpt2 "
             "--per_device_train_batch_size 4 --max_steps 600 --logging_steps 50 --save_strategy no --learning_rate 5e-4 "
             "--use_cpu --ddp_backend gloo --ddp_timeout 30 --report_to none --log_level info",
             env=dict(ENV23), action=("stopcont_until", 1, "'epoch': '0.2'}", None, 40, 60)),
    # node 1's scratch/ is a nearly full node-local disk (a 1 MiB tmpfs in node 1's mount namespace)
    Scenario("b23_st_node1_scratch_full_twonode", "train_ae.py", AE23_2N.format(k=0), cmd2=AE23_2N.format(k=1),
             setup="mkdir -p scratch", mask2="scratch", env=dict(ENV23)),
    # from step 200, two busy processes on each of the host's two cores (another tenant's job)
    Scenario("b23_slow_hogx_json_redirects", "train_ctr.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --redirects 3 "
             "train_ctr.py", env=dict(ENV23), action=("hogx", '"step": 200,', None, "0,1", 2, 1.0)),
]
CKPT23 = ("mkdir -p /mnt/ckpt23 && (mountpoint -q /mnt/ckpt23 && umount /mnt/ckpt23 || true) && "
          "mount -t tmpfs -o size=256m tmpfs /mnt/ckpt23")
# two QA shards of 9000 pairs; shard 1's copy was cut off mid-line (a partial upload), then the next export appended
QA23 = r"""mkdir -p data/qa && python - <<'EOF2'
import json, random
rng = random.Random(5)
words = [f"w{i}" for i in range(8000)]
for s in range(2):
    lines = [json.dumps({"id": f"qa-{s}-{i:05d}", "question": " ".join(rng.choice(words) for _ in range(rng.randint(5, 20))),
                         "answer": " ".join(rng.choice(words) for _ in range(rng.randint(10, 40)))}) for i in range(9000)]
    if s == 1:
        lines[5210] = lines[5210][: len(lines[5210]) // 2]
    open(f"data/qa/shard-{s:02d}.jsonl", "w").write("\n".join(lines) + "\n")
EOF2"""
SCENARIOS += [
    # the checkpoint volume goes read-only (a storage failover) after the step-40 save_state
    Scenario("b23_st_accel_save_state_ro_remount", "train_sentiment.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_sentiment.py",
             setup=CKPT23, teardown="umount /mnt/ckpt23; rmdir /mnt/ckpt23; true", env=dict(ENV23),
             action=("shell", "saved state to /mnt/ckpt23/sentiment-lstm/step_40", "mount -o remount,ro /mnt/ckpt23")),
    Scenario("b23_data_worker_jsonl_trunc_accel_r1", "train_qa.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_qa.py", setup=QA23,
             env=dict(ENV23)),
]
SCENARIOS += [
    # the user's shell profile, copied from the GPU cluster, exports GLOO_SOCKET_IFNAME=ib0; this machine has no ib0
    Scenario("b23_cfg_gloo_ifname_ib0_accel", "train_churn.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_churn.py",
             env={**ENV23, "GLOO_SOCKET_IFNAME": "ib0"}),
]
# ---------------------------------------------------------------------------------------------------------------
# batch 24 (ids b24_*): the common weekly failures again (an OOM kill while the peer is in the all-reduce, SIGTERM from
# outside during evaluation and during accelerate's save_state, a collate_fn error in a Ray worker's DataLoader, a full
# checkpoint volume under checkpoint rotation, a depth that differs between nodes, a background-upload deadlock, wrongly
# laid-out images on one rank, a node that never started under accelerate, a throttled rank, a starved loader), in
# launch shapes and log layouts earlier batches used little (logfmt, JSON records); recorded with ZOO_CGROUP_TAG=b24
# ZOO_PORT_OFFSET=500 (another recorder shares the host)
ENV24 = {"OMP_NUM_THREADS": "1"}
# pre-tokenized product titles, one part per Ray worker; one row of part 01 has "ids": null (the exporter's tokenizer
# call failed on an emoji-only title and the export wrote null instead of skipping the row)
TITLES24 = r"""mkdir -p data/titles && python - <<'EOF2'
import json, random
for w in range(2):
    rng = random.Random(w)
    with open(f"data/titles/titles-part-{w:02d}.jsonl", "w") as f:
        for i in range(6400):
            ids = [rng.randrange(1, 30000) for _ in range(rng.randint(4, 24))]
            if w == 1 and i == 4711:
                ids = None
            f.write(json.dumps({"sku": f"S{w}{i:06d}", "ids": ids, "label": rng.randrange(40)}) + "\n")
EOF2"""
# per-region tile exports (N x 3 x 32 x 32 uint8); region 2 was re-exported by the new tiler, which writes N x 32 x 32 x 3
TILES24 = r"""mkdir -p tiles && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
for r in range(3):
    x = rng.integers(0, 256, (2000, 3, 32, 32), dtype=np.uint8)
    np.save(f"tiles/region-{r}.npy", x.transpose(0, 2, 3, 1).copy() if r == 2 else x)
    np.save(f"tiles/region-{r}.labels.npy", rng.integers(0, 10, 2000))
EOF2"""
CKPT24 = ("mkdir -p ckpt && (mountpoint -q ckpt && umount ckpt || true) && mount -t tmpfs -o size=48m tmpfs ckpt")
QT24_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
           "--rdzv-id qtower-0412 --rdzv-conf join_timeout=20 train_qtower.py --layers {n}")
# SIGTERM to the accelerate launcher as soon as the step-200 save_state has written its model file (a preemption)
SAVE24 = r"""python - <<'EOF2'
import os, signal, time
pid = None
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        env = open(f"/proc/{p}/environ", "rb").read().split(b"\0")
        cmd = open(f"/proc/{p}/cmdline", "rb").read()
    except OSError:
        continue
    if b"ZOO_RUN=b24_inf_sigterm_accel_save_state" in env and b"accelerate" in cmd and b"launch" in cmd:
        pid = int(p)
while pid and not os.path.exists("checkpoints/cap-ret/step_200/model.safetensors"):
    time.sleep(0.001)
if pid:
    os.kill(pid, signal.SIGTERM)
EOF2"""
SCENARIOS += [
    # rank 1's container memory limit is 560 MiB; the replay pool grows on every rank
    Scenario("b24_oom_logfmt_allreduce_r1", "train_ranker.py", f"{TR} 2 --master-port {{port}} --tee 3 train_ranker.py",
             env=dict(ENV24), action=("cgroup", 1, 560)),
    # rank 0 SIGTERMed from outside as it starts the epoch-1 evaluation
    Scenario("b24_inf_sigterm_eval_json_r0", "train_kws.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} train_kws.py", env=dict(ENV24),
             action=("kill", 0, signal.SIGTERM, "epoch 1 train done")),
    Scenario("b24_data_ray_collate_r1", "train_titles.py", "python train_titles.py", setup=TITLES24,
             env={**ENV24, "RAY_DEDUP_LOGS": "0"}),
    # the checkpoint volume is 48 MiB (a quota'd project volume)
    Scenario("b24_st_enospc_spawn_logfmt_r0", "train_basket.py", "python train_basket.py --port {port}",
             setup=CKPT24, teardown="umount ckpt; true", env=dict(ENV24)),
    # node 1's job line has --layers 3 (node 0: 4)
    Scenario("b24_cfg_layers_node1_c10d_json", "train_qtower.py", QT24_2N.format(n=4), cmd2=QT24_2N.format(n=3),
             env=dict(ENV24)),
    Scenario("b24_hang_executor_nested_r0", "train_sentiment.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_sentiment.py",
             env=dict(ENV24)),
    # from rank 1's step-200 line, rank 1 is stopped 90 ms of every 150 ms (SIGSTOP/SIGCONT: a throttled VM) to the end
    Scenario("b24_slow_stopcont_spawn_r1", "train_fraud.py", "python train_fraud.py --port {port}", env=dict(ENV24),
             action=("stopcont_until", 1, "rank=1 step=200/", None, 60, 90)),
    # from rank 0's step-150 line, rank 0's two DataLoader workers held to 6 % of a core
    Scenario("b24_slow_worker_quota_json_r0", "train_esc.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 train_esc.py",
             env=dict(ENV24), action=("worker_quota", 0, '"rank": 0, "step": 150,', 6)),
    Scenario("b24_data_hwc_images_r2", "train_landcover.py", f"{TR} 3 --standalone train_landcover.py", setup=TILES24,
             env=dict(ENV24)),
    Scenario("b24_inf_sigterm_accel_save_state", "train_capret.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_capret.py",
             env=dict(ENV24), action=("shell", "saved state to checkpoints/cap-ret/step_100", SAVE24)),
    # a two-machine job whose second machine never started (only node 0's terminal exists)
    Scenario("b24_inf_accel_node1_never_started", "train_layout.py",
             "accelerate launch --multi_gpu --num_machines 2 --num_processes 4 --machine_rank 0 "
             "--main_process_ip 127.0.0.1 --main_process_port {port} --rdzv_conf timeout=20 train_layout.py",
             env=dict(ENV24)),
]
# per-city listing exports (8000 rows, 14 features); one row of berlin's export has an empty floor_area_m2 cell (a
# listing whose area field the portal left blank), which pandas reads as NaN
LISTINGS24 = r"""mkdir -p data && python - <<'EOF2'
import csv, random
cols = ["floor_area_m2", "rooms", "floor", "year_built", "dist_center_km", "balcony", "elevator", "garden",
        "parking", "energy_kwh_m2", "noise_db", "lat", "lon", "listing_age_days"]
for r, city in enumerate(["berlin", "hamburg", "munich"]):
    rng = random.Random(r)
    with open(f"data/listings-{city}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["listing_id", *cols, "rent_eur"])
        for i in range(8000):
            row = [f"{rng.uniform(20, 160):.1f}", rng.randint(1, 6), rng.randint(0, 12), rng.randint(1900, 2024),
                   f"{rng.uniform(0.2, 25):.2f}", rng.randint(0, 1), rng.randint(0, 1), rng.randint(0, 1),
                   rng.randint(0, 1), rng.randint(30, 250), rng.randint(30, 80), f"{rng.uniform(52.3, 52.7):.5f}",
                   f"{rng.uniform(13.1, 13.7):.5f}", rng.randint(0, 90)]
            if r == 0 and i == 5170:
                row[0] = ""
            w.writerow([f"{city[:3].upper()}{i:06d}", *row, f"{rng.uniform(400, 3000):.0f}"])
EOF2"""
SCENARIOS += [
    Scenario("b24_data_nan_empty_cell_redirects_r0", "train_rent.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --redirects 3 "
             "train_rent.py", setup=LISTINGS24, env=dict(ENV24)),
]
# the ticket export: 8 gzip-less JSON-lines parts named tickets-0000N.jsonl; the job line's glob was copied from the
# previous export's README, which wrote .json parts
TICKETS24 = r"""mkdir -p data/tickets && python - <<'EOF2'
import json, random
rng = random.Random(3)
words = [f"w{i}" for i in range(6000)]
for p in range(8):
    with open(f"data/tickets/tickets-{p:05d}.jsonl", "w") as f:
        for i in range(1500):
            f.write(json.dumps({"id": f"T{p}{i:05d}", "text": " ".join(rng.choice(words) for _ in range(rng.randint(5, 60))),
                                "queue": rng.randrange(18)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b24_cfg_train_glob_ext", "train_router.py",
             f"{TR} 2 --standalone --tee 3 train_router.py --train-glob 'data/tickets/tickets-*.json'",
             setup=TICKETS24, env=dict(ENV24)),
]
# the pre-tokenized corpus, one .bin/.idx pair per rank (1600 documents each); one entry of shard 01's index was
# overwritten by a bad block on the preprocessing node: its offset points far past the end of the token file
CORPUS24 = r"""mkdir -p corpus && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
for r in range(2):
    lens = rng.integers(40, 400, 1600)
    offs = np.concatenate([[0], np.cumsum(lens)[:-1]])
    rng.integers(1, 4000, int(lens.sum()), dtype=np.uint16).tofile(f"corpus/web-en-{r:02d}.bin")
    idx = np.stack([offs, lens], 1).astype(np.int64)
    if r == 1:
        idx[913, 0] = 0x7F3A00000000
    np.save(f"corpus/web-en-{r:02d}.idx.npy", idx)
EOF2"""
SCENARIOS += [
    Scenario("b24_data_worker_segv_idx_r1", "pretrain_lm.py", f"{TR} 2 --master-port {{port}} pretrain_lm.py",
             setup=CORPUS24, env=dict(ENV24)),
]
# ---------------------------------------------------------------------------------------------------------------
# batch 25 (ids b25_*): the common weekly failures in shapes earlier batches used little (an OOM kill while rank 0 alone
# prepares a table the other rank waits for, a SIGKILL to the launcher that leaves only truncated logs, SIGBUS from a
# memory-mapped cache on a full scratch tmpfs, bit rot in a compressed part read by a DataLoader worker under mp.spawn, a
# checkpoint directory given where a file is expected, a DistributedSampler with shuffle=True, a node started with fewer
# epochs, a freeze list that freezes everything under Ray Train, a blocking point-to-point ring, a Ray worker waiting on a
# file lock held by a leftover process, a CPU-limited process under accelerate, tiny parquet row groups on one rank, local
# rank 0 of every node saving to one shared path, dcp.async_save on the training's process group and on a full volume, a
# connection reset under the Trainer); recorded with ZOO_CGROUP_TAG=z25 ZOO_PORT_OFFSET=3 (another recorder shares the host)
ENV25 = {"OMP_NUM_THREADS": "1"}
# the item catalogue: 120,000 items with 5 tags each (12 MB of JSON lines)
CATALOG25 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(0)
tags = [f"tag{i}" for i in range(5000)]
with open("data/catalog.jsonl", "w") as f:
    for i in range(120000):
        f.write(json.dumps({"item_id": f"I{i:07d}", "title": f"item {i}", "tags": rng.sample(tags, 5)}) + "\n")
EOF2"""
# the node's scratch cache is a 32 MiB volume; another job left 18 MB of features in it
SCRATCH25 = ("mkdir -p cache && (mountpoint -q cache && umount cache || true) && mount -t tmpfs -o size=32m tmpfs cache "
             "&& mkdir -p cache/asr-job-4411 && head -c 18000000 /dev/urandom > cache/asr-job-4411/feats-000.bin")
# per-site ECG beat parts (compressed .npz, 400 beats x 180 samples); in site 2's part 03 a run of bytes inside the
# compressed member was flipped (bit rot on the archive copy the site's parts came from)
ECG25 = r"""mkdir -p data/ecg && python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for s in range(3):
    os.makedirs(f"data/ecg/site-{s}", exist_ok=True)
    for k in range(6):
        x = (np.sin(np.linspace(0, 12, 180))[None, :] + 0.3 * rng.standard_normal((400, 180))).astype(np.float32)
        np.savez_compressed(f"data/ecg/site-{s}/beats-{k:02d}.npz", x=x, y=rng.integers(0, 5, 400))
p = "data/ecg/site-2/beats-03.npz"
raw = bytearray(open(p, "rb").read())
for i in range(len(raw) // 2, len(raw) // 2 + 64):
    raw[i] ^= 0x5A
open(p, "wb").write(bytes(raw))
EOF2"""
# the checkpoint of last week's run, saved by the newer save code as a directory (model, optimizer, state)
KWSCKPT25 = r"""mkdir -p checkpoints/conformer-s/step_4000 && python - <<'EOF2'
import json, torch, torch.nn as nn
m = nn.Sequential(nn.Conv1d(40, 144, 3, padding=1), nn.GELU(), nn.Conv1d(144, 144, 3, padding=1), nn.GELU(),
                  nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(144, 35))
o = torch.optim.AdamW(m.parameters(), lr=5e-4)
d = "checkpoints/conformer-s/step_4000"
torch.save(m.state_dict(), f"{d}/model.pt")
torch.save(o.state_dict(), f"{d}/optimizer.pt")
json.dump({"step": 4000, "epoch": 11}, open(f"{d}/trainer_state.json", "w"))
EOF2"""
POS25_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
            "{logdir}train_pos.py --epochs {e}")
# the query shards; a tokenizer process of the job's previous attempt is still alive on the node, stuck, holding the
# cache lock of shard 01 (it carries the run's ZOO_RUN, so the recorder ends it with the run)
QUERIES25 = r"""mkdir -p data/queries cache/queries && python - <<'EOF2'
import random
rng = random.Random(5)
words = [f"q{i}" for i in range(8000)]
for s in range(2):
    with open(f"data/queries/shard-{s:02d}.txt", "w") as f:
        for _ in range(12000):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(2, 14))) + "\n")
EOF2
setsid nohup python -c "
import time
from filelock import FileLock
lock = FileLock('cache/queries/shard-01.tok.npy.lock')
lock.acquire()
time.sleep(3600)
" > /dev/null 2>&1 < /dev/null &
sleep 1"""
# per-rank parquet feature parts (5 x 51,200 rows); rank 1's parts 2-4 come from the new streaming exporter, which
# flushes a row group every 4 rows
CTR25 = r"""mkdir -p data/ctr && python - <<'EOF2'
import os, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng(0)
for r in range(2):
    os.makedirs(f"data/ctr/rank{r}", exist_ok=True)
    for k in range(5):
        x = rng.standard_normal((51200, 64)).astype(np.float32)
        t = pa.table({"features": list(x), "clicked": (rng.random(51200) < 0.1).astype(np.int8)})
        pq.write_table(t, f"data/ctr/rank{r}/part-{k:05d}.parquet", row_group_size=4 if (r == 1 and k >= 2) else 8192)
EOF2"""
SCENARIOS += [
    # rank 0's container memory limit is 500 MiB
    Scenario("b25_oom_init_broadcast_pyrun_r0", "train_recsys.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 --tee 3 train_recsys.py",
             setup=CATALOG25, env=dict(ENV25), action=("cgroup", 0, 500)),
    # the launcher (torchrun, the container's main process) SIGKILLed from outside at rank 0's step-300 line; its
    # workers go with the container (the recorder ends every process of the run)
    Scenario("b25_inf_sigkill_launcher_logdir", "train_tagger.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_tagger.py", env=dict(ENV25),
             action=("kill_launcher", signal.SIGKILL, "[rank0] INFO step 300/1200")),
    Scenario("b25_st_memmap_tmpfs_sigbus_r0", "train_retriever.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_retriever.py",
             setup=SCRATCH25, teardown="umount cache; true", env=dict(ENV25)),
    Scenario("b25_data_npz_bitrot_worker_spawn_r2", "train_ecg.py", "python train_ecg.py {port}", setup=ECG25,
             env=dict(ENV25)),
    Scenario("b25_cfg_resume_dir_not_file", "train_kws.py",
             f"{TR} 2 --standalone train_kws.py --resume checkpoints/conformer-s/step_4000 --max-steps 12000",
             setup=KWSCKPT25, env=dict(ENV25)),
    Scenario("b25_uc_sampler_shuffle_tqdm", "train_sts.py", f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_sts.py",
             env=dict(ENV25)),
    # node 1's job line still has --epochs 2 (node 0: 3)
    Scenario("b25_cfg_epochs_node1_twonode", "train_pos.py", POS25_2N.format(k=0, logdir="--log-dir logs --tee 3 ", e=3),
             cmd2=POS25_2N.format(k=1, logdir="", e=2), env=dict(ENV25)),
    Scenario("b25_uc_freeze_prefix_ray", "train_toxicity.py", "python train_toxicity.py", env=dict(ENV25)),
    Scenario("b25_hang_ring_queue_accel", "train_moco.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_moco.py",
             env=dict(ENV25)),
    Scenario("b25_hang_ray_cache_lock_r1", "train_query_intent.py", "python train_query_intent.py", setup=QUERIES25,
             env=dict(ENV25)),
    # from the main process's step-200 line, process 1 (its threads and children) held to 20 % of a core
    Scenario("b25_slow_rankquota_accel_logfmt_r1", "train_churn.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_churn.py",
             env=dict(ENV25), action=("rank_quota", 1, "step=200/600", 20)),
    Scenario("b25_slow_data_parquet_rowgroups_r1", "train_ctr.py", f"{TR} 2 --master-port {{port}} train_ctr.py",
             setup=CTR25, env=dict(ENV25)),
]
XV25_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
           "train_xvector.py")
SCENARIOS += [
    # both nodes' agents run in the same directory: the shared project filesystem both nodes mount
    Scenario("b25_uc_local_rank_save_twonode", "train_xvector.py", XV25_2N.format(k=0), cmd2=XV25_2N.format(k=1),
             env=dict(ENV25)),
]
# the shared checkpoint volume of the project is 90 MiB (a quota'd export); each checkpoint (model + AdamW) is ~59 MB
CKPT25 = ("mkdir -p /mnt/ckpt25 && (mountpoint -q /mnt/ckpt25 && umount /mnt/ckpt25 || true) && "
          "mount -t tmpfs -o size=90m tmpfs /mnt/ckpt25")
SCENARIOS += [
    # recorded as a full-volume run; async_save on the training process group aborted at the first save (renamed)
    Scenario("b25_uc_dcp_async_default_pg", "train_lm.py", "python -m torch.distributed.run --nproc_per_node 2 "
             "--master_port {port} --tee 3 train_lm.py", setup=CKPT25, teardown="umount /mnt/ckpt25; true",
             env=dict(ENV25)),
]
SCENARIOS += [
    Scenario("b25_st_dcp_async_enospc", "train_lm.py", "python -m torch.distributed.run --nproc_per_node 2 "
             "--master_port {port} --tee 3 train_lm.py", setup=CKPT25, teardown="umount /mnt/ckpt25; true",
             env=dict(ENV25)),
]
SCENARIOS += [
    # at the Trainer's step-100 loss line, rank 1's established TCP connections are destroyed (ss -K: a NIC or switch
    # port reset on its host)
    Scenario("b25_net_conn_reset_trainer_logdir_r1", "run_clm.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 run_clm.py",
             env=dict(ENV25), action=("ss_kill", 1, "'epoch': '0.2667'")),
]
# ---------------------------------------------------------------------------------------------------------------
# batch 26 (ids b26_*): the common weekly failures in shapes earlier batches used little; recorded with
# ZOO_CGROUP_TAG=h127 ZOO_PORT_OFFSET=3 (another recorder may share the host)
ENV26 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # rank 1's container memory limit is 1600 MiB (found as spawn's second child)
    Scenario("b26_oom_lru_cache_spawn_r1", "train_ranker.py", "python train_ranker.py {port}", env=dict(ENV26),
             action=("cgroup", 1, 1600)),
]
INTENT26_2N = ("python -m torch.distributed.run --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d "
               "--rdzv_endpoint 127.0.0.1:{{port}} --rdzv_id intent-0412 --rdzv_conf join_timeout=20 train_intent.py")
SCENARIOS += [
    # node 1 (its agent and its worker) SIGKILLed when it starts the step-200 evaluation (the machine lost)
    Scenario("b26_inf_node1_lost_eval_c10d", "train_intent.py", INTENT26_2N.format(), cmd2=INTENT26_2N.format(),
             env=dict(ENV26), action=("kill_node", 1, signal.SIGKILL, "[node1] evaluating at step 200")),
]
# per-rank log-mel feature parts on the dataset mount; rank 2's part 3 sits on an NFS export that stopped answering (a
# named pipe nobody writes: open() blocks, as a read from a hung hard-mounted NFS server does)
KWS26 = r"""mkdir -p mnt/datasets/kws-v3 && python - <<'EOF2'
import os, numpy as np
rng = np.random.default_rng(0)
for r in range(3):
    os.makedirs(f"mnt/datasets/kws-v3/rank{r}", exist_ok=True)
    for k in range(6):
        if r == 2 and k == 3:
            os.mkfifo(f"mnt/datasets/kws-v3/rank{r}/feats-{k:03d}.npy")
            continue
        x = rng.standard_normal((2000, 801)).astype(np.float32)
        x[:, -1] = rng.integers(0, 12, 2000)
        np.save(f"mnt/datasets/kws-v3/rank{r}/feats-{k:03d}.npy", x)
EOF2"""
SCENARIOS += [
    Scenario("b26_st_loader_timeout_hung_mount_r2", "train_kws.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 train_kws.py",
             setup=KWS26, env=dict(ENV26)),
]
# the job's prologue fetched the pre-trained encoder from the model registry without the auth token: the registry
# answered with its sign-in page (HTTP 200 after a redirect), saved under the checkpoint's name
HTML26 = r"""mkdir -p pretrained && cat > pretrained/encoder-base-v2.pt <<'EOF2'
<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Sign in - Model Registry</title>
  <link rel="stylesheet" href="/static/css/login.3f9c2a.css">
</head>
<body>
  <div class="login-box">
    <h1>Model Registry</h1>
    <p>Please sign in with your company account to continue.</p>
    <form method="post" action="/sso/login?next=%2Fapi%2Fv1%2Fmodels%2Fencoder-base%2Fversions%2F2%2Fdownload">
      <input type="hidden" name="csrf_token" value="a81f0c2e9b7d4c55">
      <button type="submit">Sign in with SSO</button>
    </form>
  </div>
</body>
</html>
EOF2"""
SCENARIOS += [
    Scenario("b26_st_init_ckpt_html_accel", "train_encoder.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_encoder.py "
             "--init-from pretrained/encoder-base-v2.pt", setup=HTML26, env=dict(ENV26)),
]
# offer feeds per process (4 parts x 1200 offers, 9 categories); process 1's part 02 is the feed of a newly onboarded
# merchant that sells one category only
FEEDS26 = r"""python - <<'EOF2'
import json, os, random
rng = random.Random(3)
for p in range(2):
    os.makedirs(f"feeds/p{p}", exist_ok=True)
    for k in range(4):
        with open(f"feeds/p{p}/part-{k:02d}.jsonl", "w") as f:
            for i in range(1200):
                cat = "phone-cases" if (p == 1 and k == 2) else rng.choice(
                    ["phones", "phone-cases", "laptops", "shoes", "toys", "garden", "books", "audio", "kitchen"])
                f.write(json.dumps({"offer_id": f"m{p}{k}-{i}", "category": cat,
                                    "tokens": [rng.randrange(20000) for _ in range(16)]}) + "\n")
EOF2"""
SCENARIOS += [
    # three py-spy dumps of every process (as the on-call engineer takes them) 6 s after process 1 opens part-02
    Scenario("b26_hang_negsample_loop_accel_r1", "train_matcher.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_matcher.py",
             setup=FEEDS26, env=dict(ENV26),
             action=("shell", "feeds/p1/part-02.jsonl", _pyspy18("b26_hang_negsample_loop_accel_r1", "train_matcher.py", 6))),
]
# the weekly ticket export (9,600 tickets); 4 tickets closed before triage have an empty queue field
TICKETS26 = r"""mkdir -p data && python - <<'EOF2'
import csv, random
rng = random.Random(11)
queues = ["billing", "shipping", "returns", "account", "technical", "fraud", "other"]
open("data/labels.txt", "w").write("\n".join(queues) + "\n")
untriaged = set(rng.sample(range(9600), 4))
with open("data/tickets-2026w48.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["ticket_id", "created", "token_ids", "queue"])
    for i in range(9600):
        q = "" if i in untriaged else rng.choice(queues)
        w.writerow([f"T{480000 + i}", "2026-11-2%d" % rng.randrange(3, 10),
                    " ".join(str(rng.randrange(5, 8000)) for _ in range(rng.randrange(12, 48))), q])
EOF2"""
SCENARIOS += [
    Scenario("b26_data_hf_unlabeled_rows_redirects", "route_tickets.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --redirects 3 route_tickets.py", setup=TICKETS26,
             env=dict(ENV26)),
]
SCENARIOS += [
    # from rank 0's iteration-300 line to its iteration-600 line, another tenant's batch job runs three busy processes
    # per core on both of the node's cores
    Scenario("b26_slow_hog_episode_spawn", "train_fraud.py", "python train_fraud.py {port}", env=dict(ENV26),
             action=("hogx", "it 300/900", "it 600/900", "0,1", 3, 1.0)),
]
# the team's shared results volume (storage_path): a tmpfs at shared/results, remounted read-only by the storage
# side (a failover that came back read-only) when worker 0 logs its epoch-2 line
RESULTS26 = ("mkdir -p shared/results && (mountpoint -q shared/results && umount shared/results || true) && "
             "mount -t tmpfs -o size=64m tmpfs shared/results")
SCENARIOS += [
    Scenario("b26_st_ray_results_ro_remount", "train_eta.py", "python train_eta.py", setup=RESULTS26,
             teardown="umount shared/results; true", env={**ENV26, "RAY_DEDUP_LOGS": "0"},
             action=("shell", "[worker 0] epoch 2 ", "mount -o remount,ro shared/results")),
]
SCENARIOS += [
    # from rank 0's step-260 table row, rank 0 stopped 60 ms of every 100 ms (SIGSTOP/SIGCONT: its VM's vCPU
    # throttled by the hypervisor)
    Scenario("b26_slow_stopcont_table_r0", "pretrain_lm.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 3 pretrain_lm.py", env=dict(ENV26),
             action=("stopcont_until", 0, "   260 | ", None, 40, 60)),
]
SCENARIOS += [
    Scenario("b26_uc_focal_numpy_no_grad", "train_defects.py",
             f"{TR} 2 --rdzv-backend c10d --rdzv-endpoint localhost:{{port}} train_defects.py --epochs 4 "
             "--focal-from-epoch 2", env=dict(ENV26)),
]
# the node's user-space OOM daemon (earlyoom / systemd-oomd style: it sends SIGTERM, not SIGKILL) ends the process with
# the largest resident set when the node runs short of memory: here, at rank 1's step-150 line, rank 1's largest
# DataLoader worker (its decoded-image cache has grown all epoch)
EARLYOOM26 = r"""for p in /proc/[0-9]*; do
  pid=${p#/proc/}
  tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'ZOO_RUN=b26_oom_userspace_worker_term_r1' || continue
  tr '\0' '\n' < $p/environ 2>/dev/null | grep -qx 'RANK=1' || continue
  pp=$(awk '{print $4}' $p/stat)
  tr '\0' '\n' < /proc/$pp/environ 2>/dev/null | grep -qx 'RANK=1' || continue
  echo "$(awk '/VmRSS/{print $2}' $p/status) $pid"
done 2>/dev/null | sort -n | tail -1 | awk '{print $2}' | xargs -r kill -TERM"""
SCENARIOS += [
    Scenario("b26_oom_userspace_worker_term_r1", "train_leaves.py", f"{TR} 2 --master-port {{port}} --tee 2 train_leaves.py",
             env=dict(ENV26), action=("shell", "rank 1 epoch 0 step 150 ", EARLYOOM26)),
]
SCENARIOS += [
    # rank 2 SIGKILLed from outside (no memory pressure: an operator's `kill -9` of the wrong pid, a node agent) 9 s
    # after the launch, while it still builds its index and ranks 0-1 wait for it in DDP's construction
    Scenario("b26_inf_sigkill_init_redirects_r2", "train_basket.py",
             f"{TR} 3 --master-port {{port}} --log-dir logs --redirects 3 train_basket.py", env=dict(ENV26),
             action=("kill", 2, signal.SIGKILL, 9.0)),
]
# the run's checkpoint directory is a 40 MiB volume (a per-job quota'd scratch); a checkpoint is ~10.5 MB
CKPT26 = "mkdir -p ckpt && (mountpoint -q ckpt && umount ckpt || true) && mount -t tmpfs -o size=40m tmpfs ckpt"
SCENARIOS += [
    Scenario("b26_st_best_copy_enospc_r0", "train_tagger.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_tagger.py",
             setup=CKPT26, teardown="umount ckpt; true", env=dict(ENV26)),
]
SCENARIOS += [
    Scenario("b26_uc_accel_double_init", "train_sentiment.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no "
             "--main_process_port {port} train_sentiment.py", env=dict(ENV26)),
]
# 36 corpus files of 1,600 samples (16 hashed n-gram ids + the language id)
LANGID26 = r"""mkdir -p corpus && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(2)
for k in range(36):
    d = rng.integers(0, 4096, size=(1600, 17)).astype(np.int64)
    d[:, -1] = rng.integers(0, 24, 1600)
    np.save(f"corpus/langid-{k:03d}.npy", d)
EOF2"""
SCENARIOS += [
    Scenario("b26_uc_hash_shard_uneven", "train_langid.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 "
             "train_langid.py", setup=LANGID26, env=dict(ENV26)),
]
SCENARIOS += [
    # the team's launch line for its 4-GPU, 96-core nodes, run on a 2-core CPU node (OMP_NUM_THREADS not set, as
    # in the user's shell)
    Scenario("b26_cfg_nproc_threads_zero", "train_churn.py", f"{TR} 4 --standalone train_churn.py"),
]

# ---- batch 27 (h131): more hangs and slowdowns; ids b27_* ----
ENV27 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # the job's stdin is a pipe nobody writes (the batch wrapper keeps it open): pdb waits at its prompt; py-spy dumps
    # of both ranks 8 s after rank 1's step-400 line (the engineer looking at the stuck job)
    Scenario("b27_hang_breakpoint_spike_tee_r1", "train_ctr.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_ctr.py",
             env=dict(ENV27), stdin_open=True, action=("pyspy", "rank 1 step 400 ", 2, 8)),
]
# the team's scoring tool: one line per utterance (a few dozen bytes each), then the summary
SCOREKWS27 = r"""mkdir -p tools && cat > tools/score_kws.py <<'EOF2'
import sys
LABELS = ["yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "zero", "one", "two", "three", "four",
          "five", "six", "seven", "eight", "nine", "bed", "bird", "cat", "dog", "happy", "house", "marvin", "sheila",
          "tree", "wow", "backward", "forward", "follow", "learn", "visual"]
n = ok = 0
for line in open(sys.argv[1]):
    utt, p, t = line.split()
    n += 1
    ok += p == t
    print(f"{utt}\thyp={LABELS[int(p)]:<9}\tref={LABELS[int(t)]:<9}\t{'OK' if p == t else 'SUB'}")
print(f"SUMMARY utterances={n} accuracy={ok / max(n, 1):.4f}")
EOF2"""
SCENARIOS += [
    Scenario("b27_hang_popen_pipe_spawn_r0", "train_kws.py", "python train_kws.py {port}", setup=SCOREKWS27,
             env=dict(ENV27), action=("pyspy", "epoch 0 done", 2, 6)),
]
# each process's part of the click log (12,800 queries); the exporter's write of part 1 was cut mid-record at line
# 5,001 and the export went on (the next record starts on the same line)
CLICKLOG27 = r"""mkdir -p clicklog && python - <<'EOF2'
import json, random
for p in range(2):
    rng = random.Random(p)
    with open(f"clicklog/part-{p:05d}.jsonl", "w") as f:
        for i in range(12800):
            rec = json.dumps({"q": [rng.randrange(1, 30000) for _ in range(rng.randrange(2, 14))],
                              "intent": rng.randrange(48), "sid": f"s{p}{i:06d}"})
            if p == 1 and i == 5000:
                rec = rec[:rec.index(",") - 3]
            f.write(rec + ("" if p == 1 and i == 5000 else "\n"))
EOF2"""
SCENARIOS += [
    Scenario("b27_hang_prefetch_thread_accel_r1", "train_intent.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_intent.py",
             setup=CLICKLOG27, env=dict(ENV27)),
]
# node 1's local scratch: a process of the previous job on that node (never reaped) still holds the cache lock
STALE27 = ("mkdir -p scratch/n0 scratch/n1 && (setsid flock scratch/n1/tok-cache.lock sleep 100 "
           ">/dev/null 2>&1 < /dev/null &)")
TITLES27_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
               "--rdzv-id titles-0931 train_titles.py")
SCENARIOS += [
    Scenario("b27_hang_stale_flock_twonode_n1", "train_titles.py", TITLES27_2N.format(),
             cmd2=TITLES27_2N.format(), setup=STALE27, env={**ENV27, "LOCAL_SCRATCH": "scratch/n0"},
             env2={"LOCAL_SCRATCH": "scratch/n1"},
             action=("shell", "rank 1 on node 1", _pyspy18("b27_hang_stale_flock_twonode_n1", "train_titles.py", 8))),
]
SCENARIOS += [
    # from rank 1's step-300 record, rank 1 (its container) limited to 30 % of one core
    Scenario("b27_slow_rank_quota_jsonl_r1", "distill.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 distill.py", env=dict(ENV27),
             action=("rank_quota", 1, '"step": 300, ', 30)),
]
SCENARIOS += [
    # from rank 0's step-150 line, rank 0's two DataLoader workers limited to 15 % of one core together
    Scenario("b27_slow_loader_workers_quota_r0", "train_seg.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 train_seg.py", env=dict(ENV27),
             action=("worker_quota", 0, "[rank0] step 150 ", 15)),
]
SCENARIOS += [
    # from the step-400 line to the step-800 line the job's container is limited to 30 % of one core in all
    Scenario("b27_slow_quota_episode_accel", "train_basket.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_basket.py",
             env=dict(ENV27), action=("quota_until", "step 400/1200", "step 800/1200", 30)),
]
SCENARIOS += [
    # from rank 1's step-100 line on, rank 1 stopped 1.5 s each time it prints a step divisible by 100 (a node agent's
    # periodic scan freezing the process)
    Scenario("b27_slow_periodic_stall_spawn_r1", "train_eta.py", "python train_eta.py {port}", env=dict(ENV27),
             action=("stall_every", 1, "[r1] step  100/", r"\[r1\] step +(\d+)/", 100, 1500)),
]
SCENARIOS += [
    # rank 1's container memory limit 700 MiB
    Scenario("b27_oom_retrieval_eval_cache_r1", "train_retrieval.py",
             f"{TR} 2 --master-port {{port}} train_retrieval.py", env=dict(ENV27), action=("cgroup", 1, 700)),
]
SCENARIOS += [
    # Ray Train worker 1 SIGKILLed from outside when worker 0 prints its epoch-3 line
    Scenario("b27_inf_ray_worker_sigkill_r1", "train_demand.py", "python train_demand.py",
             env={**ENV27, "RAY_DEDUP_LOGS": "0"}, action=("ray_kill", 1, signal.SIGKILL, "epoch 3 loss")),
]
# the previous attempt was preempted while rank 0 wrote checkpoints/last.pt: the file ends after 2.1 MB
TRUNC27 = ("mkdir -p checkpoints && python -c \"import torch; torch.save({'model': {'emb.weight': torch.randn(12000, 128)}, "
           "'step': 400}, 'checkpoints/last.pt')\" && truncate -s 2100000 checkpoints/last.pt")
SCENARIOS += [
    Scenario("b27_st_resume_truncated_ckpt_tee", "train_tagger.py",
             f"{TR} 2 --master-port {{port}} --tee 3 train_tagger.py", setup=TRUNC27, env=dict(ENV27)),
]
# two shards tokenized for 32,000 ids; shard 1 was re-tokenized with the v2 tokenizer (8 added special tokens,
# ids 32000-32007) and some of its sequences hold them
SHARDS27 = r"""mkdir -p data/tokens && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(5)
for r in range(2):
    a = rng.integers(3, 32000, size=(1200, 65))
    if r == 1:
        a[347, 0] = 32001
        a[347, 30] = 32002
    np.save(f"data/tokens/shard-{r:03d}-of-002.npy", a)
EOF2"""
LM27_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
           "--rdzv-id lm-ft-27 train_lm.py")
SCENARIOS += [
    Scenario("b27_data_vocab_oob_twonode_n1", "train_lm.py", LM27_2N.format(), cmd2=LM27_2N.format(),
             setup=SHARDS27, env=dict(ENV27)),
]
# the team's Pushgateway (a process on {port_asset}) accepts connections and never answers (its host stalled); a
# process of its own started by setup, ended with the run
PUSHGW27 = ("printf 'pushgateway: 127.0.0.1:{port_asset}\\nscrape_interval: 15s\\n' > monitoring.yaml && "
            "(setsid python -c \"import socket, time; s = socket.socket(); "
            "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', {port_asset})); "
            "s.listen(16); time.sleep(120)\" > /dev/null 2>&1 < /dev/null &) && sleep 0.5")
SCENARIOS += [
    # py-spy dumps of both ranks 8 s after rank 0's step-100 line
    Scenario("b27_hang_pushgw_no_timeout_r0", "train_ltr.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 --log-dir logs --tee 3 train_ltr.py",
             setup=PUSHGW27, env=dict(ENV27), action=("pyspy", "rank 0 step 100 ", 2, 8)),
]
# the dataset volume (a tmpfs at datasets/ctr-2026-11 in the work dir, 4 shards of 6,000 rows) is mounted read-only, as the
# platform mounts shared datasets; unmounted in teardown
CTRDATA27 = r"""D=datasets/ctr-2026-11; mkdir -p $D && (mountpoint -q $D && umount $D || true) && \
mount -t tmpfs -o size=64m tmpfs $D && python - <<'EOF2'
import json, random
rng = random.Random(9)
for k in range(4):
    with open(f"datasets/ctr-2026-11/part-{k:03d}.jsonl", "w") as f:
        for _ in range(6000):
            f.write(json.dumps({"f": [rng.randrange(100000) for _ in range(20)], "y": int(rng.random() < 0.1)}) + "\n")
EOF2
mount -o remount,ro $D"""
SCENARIOS += [
    Scenario("b27_st_ro_dataset_index_spawn_r0", "train_ctr.py", "python train_ctr.py {port}", setup=CTRDATA27,
             teardown="umount datasets/ctr-2026-11; true",
             env=dict(ENV27)),
]
SCENARIOS += [
    # py-spy dumps of both ranks 16 s after the launch (the job stuck at step 172 by then)
    Scenario("b27_hang_pipeline_skip_send_r0", "train_pipe.py",
             "torchrun --standalone --nproc-per-node 2 --tee 3 train_pipe.py", setup="mkdir -p ckpt",
             env=dict(ENV27), action=("pyspy", 14.0, 2, 2)),
]
# ---- batch 28 (h134): common kinds in other launch shapes; ids b28_* ----
ENV28 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # rank 0's container memory limit 600 MiB
    Scenario("b28_oom_feature_cache_spawn_r0", "train_twotower.py", "python train_twotower.py {port}",
             env=dict(ENV28), action=("cgroup", 0, 600)),
]
# the shared results volume: a 4 MiB tmpfs at results/ (unmounted in teardown)
RESULTS28 = "mkdir -p results && (mountpoint -q results && umount results || true) && mount -t tmpfs -o size=4m tmpfs results"
SCENARIOS += [
    Scenario("b28_st_sqlite_metrics_full_tee_r0", "train_kws.py",
             f"{TR} 2 --master-port {{port}} --tee 3 train_kws.py", setup=RESULTS28,
             teardown="umount results; true", env=dict(ENV28)),
]
# the team's fine-tune config; save_strategy was switched to "epoch" to save disk
FTCFG28 = r"""mkdir -p configs && cat > configs/finetune.json <<'EOF2'
{"output_dir": "out/sst-bert-mini", "batch_size": 32, "lr": 5e-5, "epochs": 3, "logging_steps": 10,
 "eval_strategy": "steps", "eval_steps": 50, "save_strategy": "epoch", "load_best_model_at_end": true}
EOF2"""
SCENARIOS += [
    Scenario("b28_cfg_trainer_best_model_strategy", "finetune_sst.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --redirects 3 finetune_sst.py", setup=FTCFG28,
             env=dict(ENV28)),
]
SCENARIOS += [
    # process 1 SIGTERMed from outside as it starts its step-400 evaluation (a node drain's eviction)
    Scenario("b28_inf_sigterm_eval_accel_r1", "train_patches.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_patches.py",
             env=dict(ENV28), action=("kill", 1, signal.SIGTERM, "[process 1] evaluating at step 400")),
]
# each worker's CSV export of the sales table (6,400 rows); the export of part 1 wrote 'N/A' for a missing fuel price
SALES28 = r"""mkdir -p data && python - <<'EOF2'
import csv, random
cols = ["store", "week", "price", "promo", "holiday", "temp", "fuel", "cpi", "unemp", "lag1", "lag7", "lag28", "units"]
for r in range(2):
    rng = random.Random(r)
    with open(f"data/sales-{r}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for i in range(6400):
            row = [rng.randrange(45), rng.randrange(143)] + [round(rng.random(), 4) for _ in range(10)]
            row.append(round(rng.random() * 3, 3))
            if r == 1 and i == 4093:
                row[6] = "N/A"
            w.writerow(row)
EOF2"""
SCENARIOS += [
    Scenario("b28_data_ray_csv_na_r1", "train_sales.py", "python train_sales.py", setup=SALES28,
             env={**ENV28, "RAY_DEDUP_LOGS": "0"}),
]
# each rank's documents (label TAB token ids); in rank 1's file the dedup stage left an empty document at row 14,013
DOCS28 = r"""mkdir -p data && python - <<'EOF2'
import random
for r in range(2):
    rng = random.Random(r)
    with open(f"data/docs-{r}.tsv", "w") as f:
        for i in range(20000):
            toks = [] if (r == 1 and i == 14013) else [rng.randrange(1, 5000) for _ in range(rng.randrange(4, 40))]
            f.write(f"{rng.randrange(20)}\t{' '.join(map(str, toks))}\n")
EOF2"""
SCENARIOS += [
    # py-spy dumps of both ranks 10 s after rank 1's bar reaches 200
    Scenario("b28_hang_nonreentrant_lock_tqdm_r1", "train_topics.py",
             f"{TR} 2 --master-port {{port}} train_topics.py", setup=DOCS28, env=dict(ENV28),
             action=("pyspy", 12.0, 2, 1)),
]
# the platform's fetcher streams each rank's part into a named pipe under stream/; part 0 is fetched whole, the fetch
# of part 1 stalls after 4,000 records (its process alive, the pipe open, nothing more written); the fetchers are
# processes of their own started by setup, ended with the run
STREAM28 = r"""mkdir -p stream && rm -f stream/part-1.jsonl && mkfifo stream/part-1.jsonl && python - <<'EOF2'
import json, random
rng = random.Random(0)
with open("stream/part-0.jsonl", "w") as f:
    for i in range(13000):
        f.write(json.dumps({"q": [rng.randrange(1, 30000) for _ in range(8)], "intent": rng.randrange(48)}) + "\n")
EOF2
(setsid python -c "
import json, random, time
rng = random.Random(1)
f = open('stream/part-1.jsonl', 'w')
for i in range(4000):
    f.write(json.dumps({'q': [rng.randrange(1, 30000) for _ in range(8)], 'intent': rng.randrange(48)}) + '\n')
f.flush()
time.sleep(120)
" > /dev/null 2>&1 < /dev/null &)"""
SCENARIOS += [
    # py-spy dumps of both ranks 8 s after rank 1's step-120 record
    Scenario("b28_hang_fifo_stream_stall_r1", "train_intent.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --log-dir logs --tee 3 "
             "train_intent.py", setup=STREAM28, env=dict(ENV28), action=("pyspy", '"rank": 1, "step": 120,', 2, 8)),
]
# validation tensors: the prep job wrote its 3 files for node 0 only; node 1's directory is empty
VAL28 = ("mkdir -p data/val/node0 data/val/node1 && python -c \"import torch; g = torch.Generator().manual_seed(3); "
         "[torch.save(torch.randn(512, 96, generator=g), f'data/val/node0/val-{k:02d}.pt') for k in range(3)]\"")
TITLES28_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
               "--rdzv-id title-emb-28 train_emb.py")
SCENARIOS += [
    Scenario("b28_uc_val_skip_allreduce_twonode_n1", "train_emb.py", TITLES28_2N.format(),
             cmd2=TITLES28_2N.format(), setup=VAL28, env=dict(ENV28)),
]
SCENARIOS += [
    # from rank 1's step-200 line to the run's end, rank 1 stopped 100 ms of every 200 ms (SIGSTOP/SIGCONT: its
    # container CPU-throttled by a neighbour on the node)
    Scenario("b28_slow_stopcont_trainer_r1", "train_routing.py",
             f"{TR} 2 --master-port {{port}} --tee 3 train_routing.py", env=dict(ENV28),
             action=("stopcont_until", 1, "rank 1 step 200/", None, 100, 100)),
]
# each rank's shard of reviews (9,600 rows, ~60 words each); in rank 1's shard the rows from 4,800 on come from the
# re-export that lost the review splitting: each row holds a whole product page of reviews (~2,500 words)
REVIEWS28 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(4)
words = [f"w{k}" for k in range(3000)] + ["great", "bad", "love", "broken", "fast", "slow", "return", "works"]
for r in range(2):
    with open(f"data/reviews-{r}.jsonl", "w") as f:
        for i in range(9600):
            n = 2500 if (r == 1 and i >= 4800) else 60
            f.write(json.dumps({"text": " ".join(rng.choices(words, k=n)), "stars": rng.randrange(1, 6)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b28_slow_long_docs_loader_r1", "train_reviews.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 train_reviews.py", setup=REVIEWS28,
             env=dict(ENV28)),
]
CHURN28_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
              "train_churn.py")
SCENARIOS += [
    # from the step-800 lines to the step-1600 lines both nodes (burstable VMs out of CPU credits) held to their
    # baseline: the job's processes on both agents limited to 40 % of one core together, then lifted
    Scenario("b28_slow_credit_episode_twonode", "train_churn.py", CHURN28_2N.format(k=0), cmd2=CHURN28_2N.format(k=1),
             env=dict(ENV28), action=("quota_until", "step 800/2400", "step 1600/2400", 40)),
]
# the checkpoint volume: a 16 MiB tmpfs at ckpt/ (unmounted in teardown)
CKPT28 = "mkdir -p ckpt && (mountpoint -q ckpt && umount ckpt || true) && mount -t tmpfs -o size=16m tmpfs ckpt"
SCENARIOS += [
    # py-spy dumps of both ranks 6 s after rank 0's step-500 line
    Scenario("b28_hang_async_ckpt_writer_r0", "train_ctr.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_ctr.py", setup=CKPT28,
             teardown="umount ckpt; true", env=dict(ENV28), action=("pyspy", "rank 0 step 500 ", 2, 6)),
]
SCENARIOS += [
    Scenario("b28_hang_ray_val_uneven_allreduce", "train_fraud.py", "python train_fraud.py",
             env={**ENV28, "RAY_DEDUP_LOGS": "0"}),
]
SCENARIOS += [
    # from rank 0's step-400 line, rank 0 (its container) limited to 20 % of one core
    Scenario("b28_slow_rank_quota_tqdm_r0", "train_tagger.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_tagger.py",
             env=dict(ENV28), action=("rank_quota", 0, "rank 0 | step 400 |", 20)),
]
# ---- batch 29 (h135): common kinds in other launch shapes; ids b29_* ----
ENV29 = {"OMP_NUM_THREADS": "1"}
RETR29_2N = ("python -m torch.distributed.run --nnodes 2 --nproc_per_node 1 --node_rank {k} --master_addr 127.0.0.1 "
             "--master_port {{port}} train_retrieval.py")
SCENARIOS += [
    # node 0's container memory limit is 600 MiB (node 1 has no limit)
    Scenario("b29_oom_hardneg_twonode_n0", "train_retrieval.py", RETR29_2N.format(k=0), cmd2=RETR29_2N.format(k=1),
             env=dict(ENV29), action=("cgroup", 0, 600)),
]
SPK29_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
            "--main_process_ip 127.0.0.1 --main_process_port {{port}} train_spk.py")
SCENARIOS += [
    # node 1 lost as a whole (agent and worker SIGKILLed: the VM was reclaimed) as it logs its step-300 line
    Scenario("b29_inf_node1_lost_accel_twonode", "train_spk.py", SPK29_2N.format(k=0), cmd2=SPK29_2N.format(k=1),
             env=dict(ENV29), action=("kill_node", 1, signal.SIGKILL, "[process 1] step 300/")),
]
# the ticket export: 6 parquet parts of 4,096 rows; part 3 was written by the new exporter, which keeps the label
# as the queue's name ("billing", "technical", "account") instead of its index
TICKETS29 = r"""mkdir -p data/tickets && python - <<'EOF2'
import random
import pyarrow as pa, pyarrow.parquet as pq
names = ["billing", "technical", "account"]
for k in range(6):
    rng = random.Random(k)
    tokens = [[rng.randrange(1, 20000) for _ in range(rng.randrange(5, 60))] for _ in range(4096)]
    labels = [rng.randrange(3) for _ in range(4096)]
    if k == 3:
        labels = [names[v] for v in labels]
    pq.write_table(pa.table({"tokens": tokens, "label": labels}), f"data/tickets/part-{k:05d}.parquet")
EOF2"""
SCENARIOS += [
    Scenario("b29_data_parquet_label_str_logdir_r1", "train_intent.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_intent.py", setup=TICKETS29,
             env=dict(ENV29)),
]
# the dataset as the prep job wrote it: data/audioset-v2/ (meta.json, train_mels.npy, train_labels.npy); the run
# command, copied from an older wiki page, names data/audioset_v2
AUDIO29 = r"""mkdir -p data/audioset-v2 && python - <<'EOF2'
import json, numpy as np
rng = np.random.default_rng(0)
np.save("data/audioset-v2/train_mels.npy", rng.standard_normal((2048, 64, 100), dtype=np.float32))
np.save("data/audioset-v2/train_labels.npy", (rng.random((2048, 50)) < 0.05).astype(np.uint8))
json.dump({"num_classes": 50, "sr": 16000, "n_mels": 64}, open("data/audioset-v2/meta.json", "w"))
EOF2"""
SCENARIOS += [
    Scenario("b29_cfg_data_dir_typo_spawn", "train_tagger.py",
             "python train_tagger.py --data-dir data/audioset_v2 --world-size 2 --port {port}", setup=AUDIO29,
             env=dict(ENV29)),
]
# the previous attempt's last checkpoint, ckpt/step_3000/: rank0.pt complete, rank1.pt 0 bytes (that node was
# preempted while its save was being written; the directory entry existed, the data never reached the disk)
CHURN29 = r"""mkdir -p ckpt/step_3000 && python - <<'EOF2'
import torch, torch.nn as nn
for r in range(2):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2))
    o = torch.optim.AdamW(m.parameters(), lr=3e-4)
    m(torch.randn(4, 128)).sum().backward(); o.step()
    g = torch.Generator().manual_seed(r)
    torch.save({"model": m.state_dict(), "optim": o.state_dict(), "rng": g.get_state(), "step": 3000},
               f"ckpt/step_3000/rank{r}.pt")
EOF2
: > ckpt/step_3000/rank1.pt"""
SCENARIOS += [
    Scenario("b29_st_resume_empty_rank_ckpt_r1", "train_churn.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 train_churn.py --resume ckpt/step_3000",
             setup=CHURN29, env=dict(ENV29)),
]
# each rank's partition of the transaction table (by region); fraud when feature 0 and 3 are both high; the
# validation partition of region 1 (the newest market) holds only low-risk traffic so far (feature 0 below 0.5)
FRAUD29 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(3):
    rng = np.random.default_rng(r)
    for split, n in (("train", 12800), ("val", 1500)):
        x = rng.standard_normal((n, 32)).astype(np.float32)
        if split == "val" and r == 1:
            x[:, 0] = np.minimum(x[:, 0], 0.5 * rng.random(n).astype(np.float32))
        y = ((x[:, 0] > 1.0) & (x[:, 3] > 0.0)).astype(np.int64)
        np.savez(f"data/{split}-{r}.npz", x=x, y=y)
EOF2"""
SCENARIOS += [
    Scenario("b29_uc_precision_zero_div_c10d_r1", "train_fraud.py",
             "torchrun --nnodes 1 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint localhost:{port} --tee 3 "
             "train_fraud.py", setup=FRAUD29, env=dict(ENV29)),
]
# 12 click-log shards of 1,600 sessions and their manifest; shard 00008 (rank 2's third) was removed from the mount by
# the retention job after the manifest was written
CLICKS29 = r"""mkdir -p data/clicks && python - <<'EOF2'
import json, random
names = []
for k in range(12):
    rng = random.Random(k)
    name = f"data/clicks/shard-{k:05d}.jsonl"
    names.append(name)
    with open(name, "w") as f:
        for i in range(1600):
            f.write(json.dumps({"session": [rng.randrange(5000) for _ in range(rng.randrange(8, 30))],
                                "next": rng.randrange(5000)}) + "\n")
json.dump({"created": "2026-11-28T02:00:00Z", "shards": names}, open("data/clicks/manifest.json", "w"))
EOF2
rm data/clicks/shard-00008.jsonl"""
SCENARIOS += [
    # py-spy dumps of the three ranks 6 s after rank 2's step-50 line (its last)
    Scenario("b29_hang_retry_missing_shard_r2", "train_clicks.py", f"{TR} 3 --master-port {{port}} train_clicks.py",
             setup=CLICKS29, env=dict(ENV29), action=("pyspy", "rank 2: step 50 ", 3, 6)),
]
SCENARIOS += [
    Scenario("b29_hang_rank0_full_eval_r0", "train_vit.py", "torchrun --standalone --nproc-per-node 2 train_vit.py",
             env=dict(ENV29)),
]
SCENARIOS += [
    # the container's /dev/shm is docker's default 64 MiB (the run configuration never raised --shm-size)
    Scenario("b29_st_shm_small_spawn", "train_seg.py", "python train_seg.py {port}", shm_mb=64, env=dict(ENV29)),
]
# the output volume: a 64 MiB tmpfs at out/ (unmounted in teardown); the storage node's fault remounts it read-only
# as the run passes step 60
OUT29 = "mkdir -p out && (mountpoint -q out && umount out || true) && mount -t tmpfs -o size=64m tmpfs out"
SCENARIOS += [
    Scenario("b29_st_trainer_out_ro_accel", "finetune_reviews.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} finetune_reviews.py",
             setup=OUT29, teardown="umount out; true", env=dict(ENV29),
             action=("shell", "| 60/400 ", "mount -o remount,ro out")),
]
SCENARIOS += [
    # the two processes pinned one per core (the node's CPU manager); from process 1's it-400 line, two busy
    # processes of another tenant on process 1's core
    Scenario("b29_slow_pinhog_accel_r1", "train_forecast.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no "
             "--dynamo_backend no --main_process_port {port} train_forecast.py", env=dict(ENV29),
             action=("pin_hogx", 1, "p1 | it 400/", 2)),
]
# each rank's four export parts of 6,400 products; rank 1's parts 1-3 came from the catalogue team's new exporter,
# which writes the embedding as a JSON array of decimal numbers instead of base64 float32 bytes
PRODUCTS29 = r"""python - <<'EOF2'
import base64, json, os
import numpy as np
for r in range(2):
    os.makedirs(f"data/products/rank{r}", exist_ok=True)
    rng = np.random.default_rng(r)
    for k in range(4):
        with open(f"data/products/rank{r}/part-{k:03d}.jsonl", "w") as f:
            for i in range(6400):
                e = rng.standard_normal(768).astype(np.float32)
                emb = e.tolist() if (r == 1 and k >= 1) else base64.b64encode(e.tobytes()).decode()
                f.write(json.dumps({"sku": f"S{r}{k}{i:06d}", "emb": emb, "cat": int(rng.integers(40))}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b29_slow_json_features_tqdm_r1", "train_products.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --tee 3 train_products.py", setup=PRODUCTS29,
             env=dict(ENV29)),
]
SCENARIOS += [
    # rank 0 SIGTERMed from outside while it writes its step-400 checkpoint (at 20 MB of ~52): the node's
    # maintenance drain, whose signal reached the training process directly
    Scenario("b29_inf_sigterm_save_spawn_r0", "train_ctr.py", "python train_ctr.py {port}", env=dict(ENV29),
             action=("kill_when_file", 0, signal.SIGTERM, "checkpoints/ctr_step000400.pt", 20_000_000)),
]
SCENARIOS += [
    # process 1's prefetch process (a child of the rank) in a 250 MiB memory cgroup from the start: on this node
    # the job's helper processes run under a smaller limit
    Scenario("b29_hang_prefetch_proc_oom_accel_r1", "train_kws.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_kws.py",
             env=dict(ENV29), action=("worker_cgroup", 1, 250, "process 1: 4096 clips")),
]
RECS29_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
             "--rdzv-id recs-gru-29 train_recs.py")
SCENARIOS += [
    # node 1's worker frozen for 40 s from its step-200 line (the VM paused by the hypervisor: live migration
    # gone wrong), then resumed
    Scenario("b29_hang_node1_paused_twonode_n1", "train_recs.py", RECS29_2N.format(), cmd2=RECS29_2N.format(),
             env=dict(ENV29), action=("freeze", 1, "node=1 rank=1 step=200 ", 40)),
]
SCENARIOS += [
    # WORLD_SIZE=4 left exported in the user's shell by an earlier 4-process experiment (invisible in the command)
    Scenario("b29_cfg_stale_world_size_env_spawn", "train_rerank.py", "python train_rerank.py --nprocs 2 --port {port}",
             env={**ENV29, "WORLD_SIZE": "4"}),
]
# ---- batch 30 (h139): common kinds in other launch shapes; ids b30_* ----
ENV30 = {"OMP_NUM_THREADS": "1"}
# each pod's image shard: 3,000 zlib-compressed images; shard 1 (the new catalogue's) holds 160 x 160 images, the
# others 48 x 48
IMAGES30 = r"""mkdir -p data/images && python - <<'EOF2'
import pickle, zlib
import numpy as np
for r in range(3):
    rng = np.random.default_rng(r)
    side = 160 if r == 1 else 48
    blobs = []
    for i in range(3000):
        small = rng.integers(0, 255, (3, side // 8, side // 8), dtype=np.uint8)
        img = small.repeat(8, axis=1).repeat(8, axis=2)
        blobs.append(zlib.compress(img.tobytes(), 6))
    pickle.dump({"shape": (3, side, side), "blobs": blobs, "labels": rng.integers(0, 50, 3000).tolist()},
                open(f"data/images/shard-{r:03d}.pkl", "wb"))
EOF2"""
SCENARIOS += [
    # rank 1's pod runs under a 600 MiB memory limit (its container's), as every pod of the job does; only rank 1
    # comes near it
    Scenario("b30_oom_decoded_cache_c10d_tqdm_r1", "train_images.py",
             "torchrun --nnodes 1 --nproc-per-node 3 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "train_images.py", setup=IMAGES30, env=dict(ENV30), action=("cgroup", 1, 600)),
]
SCENARIOS += [
    # rank 3 SIGKILLed from outside as it starts the step-400 evaluation (its node's kubelet evicting the pod)
    Scenario("b30_inf_sigkill_eval_pyrun_tee_r3", "train_intent.py",
             "python -m torch.distributed.run --nproc_per_node 4 --master_port {port} --tee 3 train_intent.py",
             env=dict(ENV30), action=("kill", 3, signal.SIGKILL, "rank 3: evaluating at step 400")),
]
LOANS30 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
x = rng.standard_normal((10000, 48)).astype(np.float32)
y = ((x[:, 0] + 0.5 * x[:, 5] + 0.3 * rng.standard_normal(10000)) > 1.2).astype(np.float32)
np.savez("data/loans.npz", x=x, y=y)
EOF2"""
SCENARIOS += [
    Scenario("b30_uc_ray_onecycle_total_steps", "train_loans.py", "python train_loans.py", setup=LOANS30,
             env={**ENV30, "RAY_DEDUP_LOGS": "0"}),
]
# the last checkpoint of the previous (preempted) attempt, written by accelerator.save_state: its optimizer.bin was
# cut at 60 % when the sync from the node's local disk to the shared volume was interrupted
SIMCSE30 = r"""python - <<'EOF2'
import importlib.util, os
import torch
from accelerate import Accelerator
spec = importlib.util.spec_from_file_location("t", "train_simcse.py")
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
acc = Accelerator(cpu=True)
torch.manual_seed(0)
m = t.Encoder()
o = torch.optim.AdamW(m.parameters(), lr=2e-4)
s = torch.optim.lr_scheduler.LambdaLR(o, lambda s: min(1.0, (s + 1) / 200))
m, o, s = acc.prepare(m, o, s)
m(torch.randint(0, 8000, (4, 24))).sum().backward()
o.step(); s.step()
acc.save_state("ckpt/step_2500")
p = "ckpt/step_2500/optimizer.bin"
raw = open(p, "rb").read()
open(p, "wb").write(raw[: len(raw) * 6 // 10])
EOF2
rm -rf logs"""
SCENARIOS += [
    Scenario("b30_st_accel_resume_trunc_optim", "train_simcse.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_simcse.py "
             "--resume-from ckpt/step_2500", setup=SIMCSE30, env=dict(ENV30)),
]
# each node's local feature parts (4 x 12,800 rows); node 1's part 3 was materialised after the feature list lost
# 'doc_age_days' (63 columns), the others before (64)
RANK30 = r"""python - <<'EOF2'
import os
import numpy as np
for node in range(2):
    os.makedirs(f"data/node{node}", exist_ok=True)
    for k in range(4):
        rng = np.random.default_rng(10 * node + k)
        cols = 63 if (node == 1 and k == 3) else 64
        x = rng.standard_normal((12800, cols)).astype(np.float32)
        y = (x[:, :8].sum(1) / 3).astype(np.float32)
        np.savez(f"data/node{node}/part-{k:05d}.npz", x=x, y=y)
EOF2"""
LTR30_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 --master-port {{port}} "
            "--log-dir logs/node{k} --tee 3 train_ltr.py")
SCENARIOS += [
    Scenario("b30_data_feat_cols_twonode_n1", "train_ltr.py", LTR30_2N.format(k=0), cmd2=LTR30_2N.format(k=1),
             setup=RANK30, env=dict(ENV30)),
]
# the model config of the 256-token pilot (n_positions 256) and the packed corpus; the run is launched with the
# new packing length, --block-size 512
CHAT30 = r"""mkdir -p configs data && python - <<'EOF2'
import json
import numpy as np
json.dump({"vocab_size": 8192, "n_positions": 256, "n_embd": 128, "n_layer": 2, "n_head": 4},
          open("configs/model.json", "w"), indent=2)
np.save("data/chat_tokens.npy", np.random.default_rng(0).integers(0, 8192, 600000, dtype=np.int32))
EOF2"""
SCENARIOS += [
    Scenario("b30_cfg_block_size_positions_accel", "pretrain_chat.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} pretrain_chat.py "
             "--block-size 512", setup=CHAT30, env=dict(ENV30)),
]
# each rank's ticket export (6,400 rows); rank 2's export came from the annotation tool after a batch of tickets
# was imported but not yet labelled: rows 3,300-3,420 have "label": null
TICKETS30 = r"""mkdir -p data && python - <<'EOF2'
import json, random
for r in range(3):
    rng = random.Random(r)
    with open(f"data/tickets-{r}.jsonl", "w") as f:
        for i in range(6400):
            label = None if (r == 2 and 3300 <= i < 3420) else rng.randrange(24)
            toks = [rng.randrange(1, 20000) for _ in range(rng.randrange(8, 120))]
            f.write(json.dumps({"id": f"T{r}{i:06d}", "tokens": toks, "label": label}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b30_data_null_label_worker_redirects_r2", "train_topics.py",
             f"{TR} 3 --master-port {{port}} --log-dir logs --redirects 3 train_topics.py", setup=TICKETS30,
             env=dict(ENV30)),
]
# each node's crawl parts (3 x 2,000 documents with a language tag); node 1's part 00001 came from the new crawl
# whose language detection failed: every document is tagged "und"
CRAWL30 = r"""python - <<'EOF2'
import json, os, random
for node in range(2):
    os.makedirs(f"data/node{node}", exist_ok=True)
    for k in range(3):
        rng = random.Random(10 * node + k)
        with open(f"data/node{node}/crawl-{k:05d}.jsonl", "w") as f:
            for i in range(2000):
                lang = "und" if (node == 1 and k == 1) else rng.choice(["en", "en", "en", "de", "fr"])
                f.write(json.dumps({"url": f"https://example.org/{node}/{k}/{i}", "lang": lang,
                                    "ids": [rng.randrange(4000) for _ in range(rng.randrange(60, 400))]}) + "\n")
EOF2"""
LM30_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
           "--rdzv-id crawl-lm-30 --log-dir logs/node{k} --redirects 3 train_lm.py")
SCENARIOS += [
    # py-spy dumps of both ranks 8 s after node 1's step-40 line (the on-call engineer's look at the stuck job)
    Scenario("b30_hang_lang_filter_spin_twonode_n1", "train_lm.py", LM30_2N.format(k=0), cmd2=LM30_2N.format(k=1),
             setup=CRAWL30, env=dict(ENV30), action=("pyspy", "node 1 rank 1: step 40 ", 2, 8)),
]
SCENARIOS += [
    Scenario("b30_hang_wait_main_only_accel", "train_iqa.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no "
             "--dynamo_backend no --main_process_port {port} train_iqa.py", env=dict(ENV30)),
]
BASKET30_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --node-rank {k} --master-addr 127.0.0.1 "
               "--master-port {{port}} --tee 3 train_basket.py")
SCENARIOS += [
    # each node's process pinned to its own core (node 0: core 0, node 1: core 1); from node 1's it-400 line two
    # busy processes of another tenant share node 1's core (a noisy neighbour on an oversubscribed host)
    Scenario("b30_slow_pinhog_twonode_n1", "train_basket.py", BASKET30_2N.format(k=0), cmd2=BASKET30_2N.format(k=1),
             env=dict(ENV30), action=("pin_hogx", 1, "[node1/rank1] it 400/", 2)),
]
# each rank's 8 thumbnail shards (1,600 images each, stored at 64 x 64); rank 0's shards 4-7 came from the new
# ingestion job, which stored the originals (512 x 512) instead of thumbnails
THUMBS30 = r"""python - <<'EOF2'
import os, pickle, zlib
import numpy as np
for r in range(2):
    os.makedirs(f"data/rank{r}", exist_ok=True)
    for k in range(8):
        rng = np.random.default_rng(10 * r + k)
        side = 512 if (r == 0 and k >= 4) else 64
        blobs = []
        for i in range(1600):
            small = rng.integers(0, 255, (3, 16, 16), dtype=np.uint8)
            blobs.append(zlib.compress(small.repeat(side // 16, 1).repeat(side // 16, 2).tobytes(), 6))
        pickle.dump({"blobs": blobs, "labels": rng.integers(0, 20, 1600).tolist()},
                    open(f"data/rank{r}/shard-{k}.pkl", "wb"))
EOF2"""
SCENARIOS += [
    Scenario("b30_slow_fullres_images_r0", "train_thumbs.py", "torchrun --standalone --nproc-per-node 2 train_thumbs.py",
             setup=THUMBS30, env=dict(ENV30)),
]
# checkpoints/ is the job's 32 MiB scratch volume (a tmpfs; unmounted in teardown): room for two of the ~13 MB
# checkpoints, and nothing deletes old ones
QCLS30 = ("mkdir -p checkpoints && (mountpoint -q checkpoints && umount checkpoints || true) && "
          "mount -t tmpfs -o size=32m tmpfs checkpoints")
SCENARIOS += [
    Scenario("b30_st_save_pretrained_full_spawn_r0", "train_qcls.py", "python train_qcls.py {port}", setup=QCLS30,
             teardown="umount checkpoints; true", env=dict(ENV30)),
]
# each process's recordings: 2,400 clips; process 0's are 1 s keyword clips (16,000 samples), process 1's came
# from the long-form set (8 s, 128,000 samples: the whole utterance is cached per clip)
CLIPS30 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r, n in ((0, 16000), (1, 128000)):
    rng = np.random.default_rng(r)
    np.save(f"data/clips-{r}.npy", (rng.standard_normal((2400, n)) * 3000).astype(np.int16))
EOF2"""
SCENARIOS += [
    # process 1's DataLoader workers in a 500 MiB memory cgroup (v1) from the start (on that node the job's
    # helper processes run under the container's limit)
    Scenario("b30_oom_loader_workers_cache_accel_r1", "train_kws.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_kws.py",
             setup=CLIPS30, env=dict(ENV30), action=("worker_cgroup", 1, 500, "clips per process")),
]
SCENARIOS += [
    # process 1 frozen (cgroup v1 freezer, as `docker pause` or a checkpoint/restore agent freezes a container) from
    # its step-800 line for 45 s, then thawed
    Scenario("b30_hang_rank1_frozen_spawn_r1", "train_anomaly.py", "python train_anomaly.py {port}", env=dict(ENV30),
             action=("freeze", 1, "p1 step 800 ", 45)),
]
# each process's packed features (4,000 utterances of 100-180 frames); in process 0's file the header of
# utterance 2,417 was overwritten by the feature job's crashed retry (a frame count of 2**40)
PACK30 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(2):
    rng = np.random.default_rng(r)
    parts, offsets, pos = [], [], 0
    for i in range(4000):
        n = int(rng.integers(100, 181))
        frames = 2 ** 40 if (r == 0 and i == 2417) else n
        head = np.array([frames, rng.integers(31)], dtype=np.int64).tobytes()
        body = rng.standard_normal((n, 40)).astype(np.float16).tobytes()
        offsets.append(pos)
        parts += [head, body]
        pos += len(head) + len(body)
    open(f"data/feats-{r}.pack", "wb").write(b"".join(parts))
    np.save(f"data/feats-{r}.offsets.npy", np.array(offsets, dtype=np.int64))
EOF2"""
SCENARIOS += [
    Scenario("b30_data_pack_header_collate_spawn_r0", "train_s2i.py", "python train_s2i.py {port}", setup=PACK30,
             env=dict(ENV30)),
]
HEAD30_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
             "--main_process_ip 127.0.0.1 --main_process_port {{port}} --mixed_precision no --dynamo_backend no "
             "train_headlines.py")
SCENARIOS += [
    Scenario("b30_uc_eval_generate_ddp_accel_twonode", "train_headlines.py", HEAD30_2N.format(k=0),
             cmd2=HEAD30_2N.format(k=1), env=dict(ENV30)),
]

# ---- batch 31 (h141): common kinds in other launch shapes; ids b31_* ----
ENV31 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # rank 2's pod runs under a 700 MiB memory limit (its container's); every rank keeps the evaluation's logits,
    # rank 2 is the one whose limit they pass
    Scenario("b31_oom_eval_logits_logdir_r2", "train_lm_eval.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_lm_eval.py",
             env=dict(ENV31), action=("cgroup", 2, 700)),
]
# each rank's review dump: 16,000 reviews of 60-180 words
REVIEWS31 = r"""mkdir -p data && python - <<'EOF2'
import json, random
words = [f"w{i}" for i in range(5000)] + ["good", "bad", "great", "awful", "fine", "slow", "fast", "broken"]
for r in range(2):
    rng = random.Random(r)
    with open(f"data/reviews-{r}.jsonl", "w") as f:
        for i in range(16000):
            text = " ".join(rng.choice(words) for _ in range(rng.randrange(60, 180)))
            f.write(json.dumps({"id": i, "stars": rng.randrange(1, 6), "text": text}) + "\n")
EOF2"""
SCENARIOS += [
    # rank 1 SIGTERMed from outside while it tokenizes its shard at start-up (its node drained for maintenance)
    Scenario("b31_inf_sigterm_init_torchrun_r1", "train_reviews.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_reviews.py", setup=REVIEWS31, env=dict(ENV31),
             action=("kill", 1, signal.SIGTERM, "[rank1] tokenized 8000 reviews")),
]
# checkpoints/ is the shared checkpoint volume (a 256 MiB tmpfs); after the step-100 save the volume goes read-only
# (the storage server's failover remounts it ro)
CKPT31 = ("mkdir -p checkpoints && (mountpoint -q checkpoints && umount checkpoints || true) && "
          "mount -t tmpfs -o size=256m b31_ckpt checkpoints")
SCENARIOS += [
    Scenario("b31_st_dcp_ro_remount_spawn", "train_ctr.py", "python train_ctr.py {port}", setup=CKPT31,
             teardown="umount checkpoints; true", env=dict(ENV31),
             action=("shell", "saved checkpoint checkpoints/ctr/step_000100", "mount -o remount,ro checkpoints")),
]
TAG31_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
            "--rdzv-id tagger-31 --tee 3 train_tagger.py --d-model {d} --layers 2 --heads 4")
SCENARIOS += [
    # node 1's launch line still carries the old --d-model (its launch script was not updated)
    Scenario("b31_cfg_dmodel_args_twonode_n1", "train_tagger.py", TAG31_2N.format(d=256),
             cmd2=TAG31_2N.format(d=384), env=dict(ENV31)),
]
# each site's sensor windows (12,000 x 96 readings); site 1's export wrote two overflowed readings as inf
SITES31 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(2):
    rng = np.random.default_rng(r)
    x = (rng.standard_normal((12000, 96)) * 40 + 300).astype(np.float32)
    y = (x[:, -24:].mean(1) / 100 + 0.1 * rng.standard_normal(12000)).astype(np.float32)
    if r == 1:
        x[7311, 52] = np.inf
        x[10045, 17] = np.inf
    np.savez(f"data/site-{r}.npz", x=x, y=y)
EOF2"""
SCENARIOS += [
    Scenario("b31_data_ray_inf_sensor_r1", "train_load.py", "python train_load.py", setup=SITES31,
             env={**ENV31, "RAY_DEDUP_LOGS": "0"}),
]
# each process's crop shard as a zip; the node-local cache still holds part of process 1's shard from the previous
# (preempted) attempt
CROPS31 = r"""mkdir -p data cache/crops-1 && python - <<'EOF2'
import io, zipfile
import numpy as np
for r in range(2):
    rng = np.random.default_rng(r)
    with zipfile.ZipFile(f"data/crops-{r}.zip", "w") as z:
        for k in range(4):
            for name, arr in ((f"x-{k:03d}.npy", rng.integers(0, 255, (500, 3, 32, 32), dtype=np.uint8)),
                              (f"y-{k:03d}.npy", rng.integers(0, 38, 500, dtype=np.int64))):
                buf = io.BytesIO()
                np.save(buf, arr)
                z.writestr(name, buf.getvalue())
                if r == 1 and k < 2:
                    open(f"cache/crops-1/{name}", "wb").write(buf.getvalue())
EOF2"""
SCENARIOS += [
    Scenario("b31_hang_unzip_prompt_accel_r1", "train_plants.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_plants.py",
             setup=CROPS31, env=dict(ENV31), stdin_open=True),
]
SCENARIOS += [
    # rank 1 stopped 150 ms of every 250 ms (SIGSTOP/SIGCONT) from its step-300 line: a throttled container
    Scenario("b31_slow_stopcont_tqdm_logdir_r1", "train_spk.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_spk.py", env=dict(ENV31),
             action=("stopcont", 1, "[rank1] step 300/", 100, 150)),
]
# each rank's token store (3,000 records of 60-200 uint16 tokens) and its (offset, n_tokens) index; rank 2's index
# was rebuilt by a job that crashed mid-write: two entries hold garbage offsets (2**40 + ...)
CODE31 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(3):
    rng = np.random.default_rng(r)
    parts, idx, pos = [], [], 0
    for i in range(3000):
        n = int(rng.integers(60, 200))
        parts.append(rng.integers(0, 8000, n, dtype=np.uint16).tobytes())
        idx.append((pos, n))
        pos += 2 * n
    idx = np.array(idx, dtype=np.int64)
    if r == 2:
        for j in (539, 2355):
            idx[j, 0] = 2 ** 40 + 4096 * j
    open(f"data/code-{r:02d}.bin", "wb").write(b"".join(parts))
    np.save(f"data/code-{r:02d}.bin.idx.npy", idx)
EOF2"""
SCENARIOS += [
    Scenario("b31_data_worker_segv_index_r2", "train_codelm.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --tee 3 train_codelm.py",
             setup=CODE31, env=dict(ENV31)),
]
# the earlier run's output directory: two Trainer checkpoints (checkpoint-200, checkpoint-400)
SENT31 = r"""python - <<'EOF2'
import json, os
for s in (200, 400):
    d = f"out/sentiment/checkpoint-{s}"
    os.makedirs(d, exist_ok=True)
    json.dump({"architectures": ["BertForSequenceClassification"], "model_type": "bert", "hidden_size": 128},
              open(f"{d}/config.json", "w"))
    for name, size in (("model.safetensors", 3_400_000), ("optimizer.pt", 6_800_000), ("scheduler.pt", 1_064),
                       ("rng_state_0.pth", 14_600), ("rng_state_1.pth", 14_600), ("training_args.bin", 5_300)):
        open(f"{d}/{name}", "wb").write(os.urandom(size))
    json.dump({"global_step": s, "epoch": s / 63, "log_history": []}, open(f"{d}/trainer_state.json", "w"))
EOF2"""
SCENARIOS += [
    # the user resumes with the output directory instead of one of its checkpoint-N directories
    Scenario("b31_cfg_trainer_resume_outdir", "train_sentiment.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} train_sentiment.py "
             "--output_dir out/sentiment --resume_from_checkpoint out/sentiment --use_cpu --ddp_backend gloo "
             "--per_device_train_batch_size 32 --num_train_epochs 2 --logging_steps 20 --save_steps 200 "
             "--report_to none", setup=SENT31, env=dict(ENV31)),
]
# the FAQ export as synced to the job's volume: the sync's include pattern was 'train*', so data/valid.jsonl is not there
FAQ31 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(0)
words = [f"t{i}" for i in range(8000)]
with open("data/train.jsonl", "w") as f:
    for i in range(30000):
        f.write(json.dumps({"question": " ".join(rng.choice(words) for _ in range(rng.randrange(5, 20))),
                            "answer": " ".join(rng.choice(words) for _ in range(rng.randrange(10, 40)))}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b31_data_valid_missing_tee1_r0", "train_faq.py",
             "torchrun --standalone --nproc-per-node 2 --log-dir logs --tee 1 train_faq.py", setup=FAQ31,
             env=dict(ENV31)),
]
SCENARIOS += [
    # the launcher (torchrun's agent) SIGTERMed when rank 0 logs the start of its step-300 checkpoint save (the job
    # preempted); the 65 MB save finished 36 ms before the signal landed
    Scenario("b31_inf_sigterm_agent_after_save_tee2", "train_clip.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} --log-dir logs --tee 2 "
             "train_clip.py", env=dict(ENV31), action=("kill_launcher", signal.SIGTERM, "saving checkpoint ckpt/step_300")),
]
SCENARIOS += [
    # from process 0's it-600 line its container's CPU limit is 25 % of a core (cgroup v1 cfs quota on the process
    # and its threads): a lowered limit / an overcommitted node
    Scenario("b31_slow_rank_quota_spawn_r0", "train_qtower.py", "python train_qtower.py {port}", env=dict(ENV31),
             action=("rank_quota", 0, "proc0 it 600/", 25)),
]

# ---- batch 32 (h146): common kinds in other launch shapes; ids b32_* ----
ENV32 = {"OMP_NUM_THREADS": "1"}
RET32_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
            "--main_process_ip 127.0.0.1 --main_process_port {{port}} --mixed_precision no --dynamo_backend no "
            "train_retrieval.py")
SCENARIOS += [
    # node 1's process runs under its pod's 900 MiB memory limit; every process keeps every batch's item embeddings
    # in its hard-negative pool (the slice only limits what is mined, not what is kept)
    Scenario("b32_oom_hardmine_pool_accel_twonode_n1", "train_retrieval.py", RET32_2N.format(k=0),
             cmd2=RET32_2N.format(k=1), env=dict(ENV32), action=("cgroup", 1, 900)),
]
SCENARIOS += [
    # rank 0 SIGKILLed from outside while it writes its step-300 checkpoint (8 MB of ~62 MB on disk): its pod evicted
    Scenario("b32_inf_sigkill_midsave_tee_tqdm_r0", "train_topics.py",
             "torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_topics.py", env=dict(ENV32),
             action=("kill_when_file", 0, signal.SIGKILL, "checkpoints/step_00300.pt", 8_000_000)),
]
# each rank's part of the ticket export (4,000 tickets, queue ids 0-23); rank 1's part covers the later weeks, in which
# the helpdesk added queue 24 ('billing-disputes') and routed tickets to it from row 2,300 on
TICKETS32 = r"""mkdir -p data && python - <<'EOF2'
import json, random
words = [f"w{i}" for i in range(9000)] + ["refund", "invoice", "login", "password", "crash", "slow", "charge"]
for r in range(2):
    rng = random.Random(r)
    with open(f"data/tickets-{r}.jsonl", "w") as f:
        for i in range(4000):
            q = rng.randrange(24)
            if r == 1 and i >= 2300 and rng.random() < 0.08:
                q = 24
            f.write(json.dumps({"ticket": f"T{r}{i:06d}", "subject": " ".join(rng.choice(words) for _ in range(6)),
                                "body": " ".join(rng.choice(words) for _ in range(rng.randrange(10, 50))),
                                "queue_id": q}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b32_data_label_oob_redirects1_r1", "train_router.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --redirects 1 train_router.py",
             setup=TICKETS32, env=dict(ENV32)),
]
# the preempted attempt's checkpoints/last/: trainer_state.json says step 200; model.safetensors was cut at 55 % when
# the copy back from the node's local disk was interrupted
KWS32 = r"""mkdir -p checkpoints/last && python - <<'EOF2'
import json, os
import torch.nn as nn
from safetensors.torch import save_file
m = nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 256, 5, padding=2), nn.ReLU(),
                  nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 35))
save_file(m.state_dict(), "checkpoints/last/model.safetensors")
json.dump({"step": 200}, open("checkpoints/last/trainer_state.json", "w"))
n = os.path.getsize("checkpoints/last/model.safetensors")
os.truncate("checkpoints/last/model.safetensors", int(n * 0.55))
EOF2"""
SCENARIOS += [
    Scenario("b32_st_resume_trunc_safetensors_spawn", "train_kws.py", "python train_kws.py {port}", setup=KWS32,
             env=dict(ENV32)),
]
# the clause corpus (20,000 clauses of 20-80 words)
CLAUSES32 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(0)
words = [f"c{i}" for i in range(20000)] + ["shall", "party", "agreement", "liability", "terminate", "notice"]
with open("data/clauses.jsonl", "w") as f:
    for i in range(20000):
        f.write(json.dumps({"id": i, "text": " ".join(rng.choice(words) for _ in range(rng.randrange(20, 80)))}) + "\n")
EOF2"""
SCENARIOS += [
    # rank 0 writes cache/vocab/vocab.ready; rank 1 polls for vocab.json.done (the marker's name changed on one side)
    Scenario("b32_hang_cache_flag_poll_pyrun_r1", "train_clauses.py",
             "python -m torch.distributed.run --standalone --nproc_per_node 2 train_clauses.py", setup=CLAUSES32,
             env=dict(ENV32)),
]
SCENARIOS += [
    # the user's shell profile, copied from the GPU cluster's job template, exports GLOO_SOCKET_IFNAME=ib0; this node
    # has no InfiniBand interface (invisible in the command as typed; Ray's workers inherit it)
    Scenario("b32_cfg_ray_gloo_ifname", "train_ctr.py", "python train_ctr.py",
             env={**ENV32, "RAY_DEDUP_LOGS": "0", "GLOO_SOCKET_IFNAME": "ib0"}),
]
SCENARIOS += [
    # rank 0's log line formats the running per-example loss vector (a tensor of 32) with ':.4f'
    Scenario("b32_uc_tensor_format_log_tee3_r0", "train_helpful.py",
             "torchrun --nproc-per-node 3 --master-port {port} --tee 3 train_helpful.py", env=dict(ENV32)),
]
SCENARIOS += [
    # the team's launch line from the GPU cluster (--ddp_backend nccl, --bf16 off), run as is on a CPU-only node
    Scenario("b32_cfg_hf_nccl_cpu_node_logdir", "train_intent.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_intent.py "
             "--output_dir out/intent --ddp_backend nccl --per_device_train_batch_size 32 --num_train_epochs 1 "
             "--logging_steps 10 --save_strategy no --report_to none", env=dict(ENV32)),
]
# each rank's catalogue shard: 60,000 'category<TAB>title' lines
TITLES32 = r"""mkdir -p data && python - <<'EOF2'
import random
words = [f"p{i}" for i in range(6000)] + ["cotton", "steel", "usb-c", "wireless", "organic", "kids", "pack"]
for r in range(3):
    rng = random.Random(r)
    with open(f"data/titles-{r}.tsv", "w") as f:
        for i in range(60000):
            f.write(f"{rng.randrange(50)}\t{' '.join(rng.choice(words) for _ in range(rng.randrange(4, 14)))}\n")
EOF2"""
SCENARIOS += [
    # rank 2 gets SIGINT from outside while it featurises its shard (the node's job-control daemon forwarding an
    # interrupt to one task)
    Scenario("b32_inf_sigint_load_logdir_r2", "train_catalog.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_catalog.py",
             setup=TITLES32, env=dict(ENV32), action=("kill", 2, signal.SIGINT, "[rank2] featurised 30000 titles")),
]
KWS32_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {{port}} "
            "--tee 3 train_kws_raw.py")
SCENARIOS += [
    # from node 1's 'it 400/' line its DataLoader workers (not the rank) are held to 8 % of a core (cgroup v1 cfs
    # quota): the node's data-loading processes starved of CPU by a lowered container limit
    Scenario("b32_slow_loader_quota_twonode_n1", "train_kws_raw.py", KWS32_2N.format(k=0), cmd2=KWS32_2N.format(k=1),
             env=dict(ENV32), action=("worker_quota", 1, "[node1] it 400/", 8)),
]
# cache/w1 is worker 1's node-local scratch: a 24 MiB tmpfs (named b32_cache) already mostly taken by another job's
# files; 80,000 sessions x 51 ids x 8 bytes = 31 MiB do not fit
CACHE32 = ("mkdir -p cache/w0 cache/w1 && (mountpoint -q cache/w1 && umount cache/w1 || true) && "
           "mount -t tmpfs -o size=24m b32_cache cache/w1 && head -c 6000000 /dev/urandom > cache/w1/.prev_job_shard")
SCENARIOS += [
    Scenario("b32_st_ray_cache_enospc_r1", "train_sessions.py", "python train_sessions.py", setup=CACHE32,
             teardown="umount cache/w1; true", env={**ENV32, "RAY_DEDUP_LOGS": "0"}),
]
EMB32_2N = ("torchrun --nnodes {n} --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
            "--rdzv-id embed-32 --rdzv-conf join_timeout=25 train_embed.py")
SCENARIOS += [
    # node 1's job script was copied from a single-node test and still says --nnodes 1
    Scenario("b32_cfg_nnodes_mismatch_c10d_twonode", "train_embed.py", EMB32_2N.format(n=2), cmd2=EMB32_2N.format(n=1),
             env=dict(ENV32)),
]
# each process's tokenized query log: 9,600 rows of 24 token ids + a label (16,000-token vocabulary); in process 1's
# part one row (row 3,900) was tokenized by the newer 32k tokenizer and holds ids past 16,000
QUERIES32 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(2):
    rng = np.random.default_rng(r)
    a = np.concatenate([rng.integers(1, 16000, (9600, 24)), rng.integers(0, 30, (9600, 1))], axis=1).astype(np.int32)
    if r == 1:
        a[3900, :24] = rng.integers(1, 32000, 24)
        a[3900, 5] = 27311
    np.save(f"data/queries-{r}.npy", a)
EOF2"""
SCENARIOS += [
    Scenario("b32_hang_skip_bad_batch_accel_r1", "train_intent_tagger.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_intent_tagger.py",
             setup=QUERIES32, env=dict(ENV32)),
]
SCENARIOS += [
    # process 1's established TCP connections destroyed (ss -K) at its epoch-1 batch-300 line: its host's link reset
    Scenario("b32_net_conn_reset_accel_r1", "train_fraud.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no "
             "--dynamo_backend no --main_process_port {port} train_fraud.py", env=dict(ENV32),
             action=("ss_kill", 1, "[process 1] epoch 1 batch 300 ok")),
]
# clean batch 6 (clean control runs, no fault; clean/runs/<id>/; recorded with clean6_record.py, ports 29850-29890)
ENV_C6 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    Scenario("clean6_ckpt_every_rank", "train_lm.py", f"{TR} 2 --master-port {{port}} train_lm.py", env=dict(ENV_C6),
             clean=True),
    Scenario("clean6_tee_dcp_timing", "train_ctr.py", f"{TR} 3 --master-port {{port}} --tee 3 train_ctr.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_logdir_eval_cut", "train_kws.py",
             f"{TR} 2 --master-port {{port}} --log-dir logs --redirects 3 train_kws.py", env=dict(ENV_C6), clean=True),
    Scenario("clean6_pyrun_megatron_warmup", "pretrain_gpt.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} pretrain_gpt.py "
             "--train-iters 800 --lr-warmup-iters 100 --save-interval 250", env=dict(ENV_C6), clean=True),
    Scenario("clean6_spawn_loader_epochs", "train_income.py", "python train_income.py", env=dict(ENV_C6), clean=True),
    Scenario("clean6_accel_grad_accum", "train_reviews.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_reviews.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_twonode_rank0_eval", "train_ae.py",
             "torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id sensor-ae train_ae.py", env=dict(ENV_C6), clean=True,
             cmd2="torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
                  "--rdzv-id sensor-ae train_ae.py"),
    Scenario("clean6_ray_epoch_eval_report", "train_churn.py", "RAY_DEDUP_LOGS=0 python train_churn.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_hf_trainer_dicts_cut", "train_topic.py", f"{TR} 2 --master-port {{port}} train_topic.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_tqdm_slow_validation", "train_denoise.py",
             f"{TR} 2 --master-port {{port}} --tee 3 train_denoise.py", env=dict(ENV_C6), clean=True),
    Scenario("clean6_samples_logging_burst_4r", "train_fp.py", f"{TR} 4 --master-port {{port}} train_fp.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_logdir_tokens_warmup_cut", "train_charlm.py",
             f"{TR} 3 --master-port {{port}} --log-dir logs --tee 3 train_charlm.py", env=dict(ENV_C6), clean=True),
    Scenario("clean6_pyrun_save_pretrained_timing", "train_gpt2.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} --tee 3 train_gpt2.py",
             env=dict(ENV_C6), clean=True),
    Scenario("clean6_elapsed_eval_epoch_cut", "train_mf.py", f"{TR} 2 --master-port {{port}} train_mf.py",
             env=dict(ENV_C6), clean=True),
]
SCENARIOS += [
    Scenario("clean6_c10d_deepspeed_lines", "train_enc.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} train_enc.py",
             env=dict(ENV_C6), clean=True),
]
SCENARIOS += [
    Scenario("clean6_spawn_generate_eval", "train_s2s.py", "python train_s2s.py", env=dict(ENV_C6), clean=True),
]

# ---- batch 33 (h152): common kinds in other launch shapes (two-node cascades, restarts, preemption + resume,
# ERROR-and-exit, caught-and-skipped collectives, py-spy dumps); ids b33_* ----
ENV33 = {"OMP_NUM_THREADS": "1"}
# each node's part of the tagged catalogue export (6,000 records); in node 1's part record 2,601 was cut mid-line by
# an interrupted append (the next record follows on the same line)
TAGS33 = r"""mkdir -p data && python - <<'EOF2'
import json, random
words = [f"a{i}" for i in range(7000)] + ["cotton", "steel", "wireless", "organic", "xl", "pack", "red", "blue"]
for r in range(2):
    rng = random.Random(r)
    lines = [json.dumps({"sku": f"S{r}{i:06d}", "title": " ".join(rng.choice(words) for _ in range(rng.randrange(4, 16))),
                         "tag": rng.randrange(40)}) for i in range(6000)]
    if r == 1:
        lines[2600] = lines[2600][:37] + lines[2601]
        del lines[2601]
    open(f"data/part-{r}.jsonl", "w").write("\n".join(lines) + "\n")
EOF2"""
TAG33_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id tagger-0412 --tee 3 train_tagger.py")
SCENARIOS += [
    Scenario("b33_data_trunc_jsonl_c10d_twonode_n1", "train_tagger.py", TAG33_2N, cmd2=TAG33_2N, setup=TAGS33,
             env=dict(ENV33)),
]
CTR33_2N = ("python -m torch.distributed.run --nnodes 2 --node_rank {k} --nproc_per_node 1 --master_addr 127.0.0.1 "
            "--master_port {{port}} train_ctr.py")
SCENARIOS += [
    # node 0's process runs under its container's 900 MiB memory limit; every process keeps every step's flattened
    # gradient (10 MB) for an end-of-epoch statistic
    Scenario("b33_oom_gradhist_pyrun_twonode_n0", "train_ctr.py", CTR33_2N.format(k=0), cmd2=CTR33_2N.format(k=1),
             env=dict(ENV33), action=("cgroup", 0, 900)),
]
# the node's job wrapper: torchrun is retried once when it fails (a fresh launch each time)
KWS33_WRAP = r"""cat > run_job.sh <<'EOF2'
#!/bin/bash
# run_job.sh: start training, retry once if it fails
for attempt in 1 2; do
  echo "=== $(date -u '+%F %T') run_job.sh: attempt $attempt/2"
  torchrun --nproc-per-node 2 --master-port {port} --log-dir logs/attempt$attempt --tee 3 train_kws.py
  rc=$?
  [ $rc -eq 0 ] && exit 0
  echo "=== $(date -u '+%F %T') run_job.sh: torchrun exited with code $rc"
  sleep 3
done
exit $rc
EOF2"""
SCENARIOS += [
    # rank 1 runs under its container's 750 MiB memory limit; the dataset keeps every decoded clip (128 KiB each) in
    # memory; the wrapper's second launch resumes from ckpt/last.pt, and the resume code reads a key the save never
    # wrote (the resume path had never run)
    Scenario("b33_oom_retry_resume_keyerror_wrapper_r1", "train_kws.py", "bash run_job.sh", setup=KWS33_WRAP,
             env=dict(ENV33), action=("cgroup", 1, 750)),
]
# three pre-tokenized shards (4M tokens each) and their manifest; shard 2 was re-synced after the manifest was written
# and 64 KiB in its middle came over as zeros (an interrupted transfer)
SHARDS33 = r"""mkdir -p data && python - <<'EOF2'
import hashlib, json
import numpy as np
man = {}
for r in range(3):
    a = np.random.default_rng(r).integers(0, 8192, 4_000_000).astype(np.int32)
    p = f"data/shard-{r:05d}.bin"
    a.tofile(p)
    man[p] = {"bytes": a.nbytes, "sha256": hashlib.sha256(a.tobytes()).hexdigest()}
json.dump(man, open("data/manifest.json", "w"), indent=1)
with open("data/shard-00002.bin", "r+b") as f:
    f.seek(7_340_032)
    f.write(b"\0" * 65536)
EOF2"""
SCENARIOS += [
    Scenario("b33_data_shard_sha_exit3_redirects_r2", "pretrain.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --redirects 3 "
             "pretrain.py", setup=SHARDS33, env=dict(ENV33)),
]
# train/valid parts per process (20,000 / 3,000 rows, 32 features, ~6 % churners); process 1's validation part is the
# newest accounts' month, in which nobody had churned yet (no positive label)
CHURN33 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
w = np.random.default_rng(99).normal(size=32).astype(np.float32)
for r in range(2):
    rng = np.random.default_rng(r)
    for name, n in (("train", 20000), ("valid", 3000)):
        x = rng.normal(size=(n, 32)).astype(np.float32)
        y = ((x @ w) + rng.normal(size=n) > 3.0).astype(np.float32)
        if r == 1 and name == "valid":
            y[:] = 0
        np.savez(f"data/{name}-{r}.npz", x=x, y=y)
EOF2"""
SCENARIOS += [
    Scenario("b33_uc_warn_skip_auc_spawn_r1", "train_churn.py", "python train_churn.py {port}", setup=CHURN33,
             env=dict(ENV33)),
]
# validation pairs per rank (2,000); rank 0's part came from a click log whose preference labels are noise with
# respect to the features (another market's log), so its validation loss stops improving early
RANK33 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(7)
w = torch.randn(64, generator=g)
torch.save(w, "data/w.pt")
for r in range(2):
    a, b = torch.randn(2000, 64, generator=g), torch.randn(2000, 64, generator=g)
    pref = ((a - b) @ w > 0).float() if r == 1 else (torch.rand(2000, generator=g) > 0.5).float()
    torch.save({"a": a, "b": b, "pref": pref}, f"data/valid-{r}.pt")
EOF2"""
# the on-call engineer's py-spy dump of every rank of the stuck job, 8 s after the last line: dumps/rank-<R>.txt
PYSPY33 = ("sleep 8; mkdir -p dumps; for pid in $(pgrep -f {f}); do "
           "[ \"$(tr '\\0' '\\n' < /proc/$pid/environ | sed -n 's/^ZOO_RUN=//p')\" = {id} ] || continue; "
           "r=$(tr '\\0' '\\n' < /proc/$pid/environ | sed -n 's/^RANK=//p'); [ -n \"$r\" ] || continue; "
           "pp=$(ps -o ppid= -p $pid | tr -d ' '); "
           "[ -z \"$(tr '\\0' '\\n' < /proc/$pp/environ | sed -n 's/^RANK=//p')\" ] || continue; "
           "/work/main/.venv/bin/py-spy dump --pid $pid > dumps/rank-$r.txt 2>&1; done")
SCENARIOS += [
    Scenario("b33_hang_local_early_stop_pyspy_tee3", "train_ranker.py",
             "torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_ranker.py", setup=RANK33, env=dict(ENV33),
             action=("shell", "early stopping at step", PYSPY33.format(f="train_ranker.py",
                                                                        id="b33_hang_local_early_stop_pyspy_tee3"))),
]
DEDUP33_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {{port}} "
              "train_dedup.py --dim 96 --max-len {n}")
SCENARIOS += [
    # node 1's job script was edited for a long-title experiment and still says --max-len 256 (node 0: 128)
    Scenario("b33_cfg_maxlen_mismatch_static_twonode", "train_dedup.py", DEDUP33_2N.format(k=0, n=128),
             cmd2=DEDUP33_2N.format(k=1, n=256), env=dict(ENV33)),
]
# the job's submit wrapper: a failed or preempted run is requeued once with --resume auto
SENT33_WRAP = r"""cat > run.sh <<'EOF2'
#!/usr/bin/env bash
for attempt in 1 2; do
  echo "[run.sh] $(date '+%H:%M:%S') launching attempt ${attempt}"
  torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_sentiment.py --resume auto --steps 600
  rc=$?
  if [[ $rc == 0 ]]; then exit 0; fi
  echo "[run.sh] $(date '+%H:%M:%S') torchrun exit code ${rc}, requeueing in 2s"
  sleep 2
done
exit $rc
EOF2"""
# the job preempted: SIGTERM to torchrun (the job's main process) once rank 0's step-200 checkpoint reaches 8 MB on disk
TERM33 = ("while [ $(stat -c%s ckpt/step_0200.pt 2>/dev/null || echo 0) -lt 8000000 ]; do sleep 0.001; done; "
          "for pid in $(pgrep -f bin/torchrun); do "
          "[ \"$(tr '\\0' '\\n' < /proc/$pid/environ | sed -n 's/^ZOO_RUN=//p')\" = {id} ] && kill -TERM $pid; done")
SCENARIOS += [
    Scenario("b33_st_preempt_partial_save_requeue", "train_sentiment.py", "bash run.sh", setup=SENT33_WRAP,
             env=dict(ENV33), action=("shell", 0, TERM33.format(id="b33_st_preempt_partial_save_requeue"))),
]
# each node's job script: torchrun, retried once with --resume (the cluster requeues a preempted job on the nodes it
# gets); $LOCAL_SCRATCH is the node's local disk (set by the node's profile, not in the command)
ASR33_JOB = r"""cat > node_job.sh <<'EOF2'
#!/bin/bash
# node_job.sh NODE_RANK
NODE_RANK=$1
for attempt in 1 2; do
  echo "[node_job] $(hostname) node_rank=$NODE_RANK attempt=$attempt $(date -u +%FT%TZ)"
  torchrun --nnodes 2 --node-rank $NODE_RANK --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} \
    train_speechcmd.py --ckpt-dir $LOCAL_SCRATCH/ckpt --resume --steps 500
  rc=$?
  [ $rc -eq 0 ] && exit 0
  echo "[node_job] torchrun exited with $rc"
  sleep 4
done
exit $rc
EOF2
mkdir -p scratch/node0 scratch/node1"""
# the job preempted after its step-200 checkpoint: SIGTERM to both nodes' torchrun; node 1 is then replaced by a fresh
# machine whose local scratch is empty (its step_00200 shard gone)
PREEMPT33 = ("for pid in $(pgrep -f bin/torchrun); do "
             "[ \"$(tr '\\0' '\\n' < /proc/$pid/environ | sed -n 's/^ZOO_RUN=//p')\" = {id} ] && kill -TERM $pid; "
             "done; sleep 1; rm -rf scratch/node1/ckpt")
SCENARIOS += [
    Scenario("b33_inf_preempt_local_ckpt_gone_twonode_n1", "train_speechcmd.py", "bash node_job.sh 0",
             cmd2="bash node_job.sh 1", setup=ASR33_JOB, env={**ENV33, "LOCAL_SCRATCH": "scratch/node0"},
             env2={"LOCAL_SCRATCH": "scratch/node1"},
             action=("shell", "step 240 loss", PREEMPT33.format(id="b33_inf_preempt_local_ckpt_gone_twonode_n1"))),
]
SCENARIOS += [
    # rank 1 runs under its container's 1,200 MiB memory limit; the evaluation keeps every batch's full-vocabulary
    # logits (gathered from both ranks) for compute_metrics (no eval_accumulation_steps, no preprocess_logits_for_metrics)
    Scenario("b33_oom_hf_eval_logits_gather_r1", "run_clm.py",
             "torchrun --nproc-per-node 2 --master-port {port} run_clm.py --output_dir out/clm --use_cpu "
             "--ddp_backend gloo --max_steps 60 --eval_strategy steps --eval_steps 30 --per_device_train_batch_size 16 "
             "--per_device_eval_batch_size 16 --logging_steps 10 --save_strategy no --report_to none",
             env=dict(ENV33), action=("cgroup", 1, 1200)),
]
# shared/ is the team's shared results volume (a 64 MiB tmpfs named b33_shared here); after the first epoch's checkpoint
# the volume goes read-only under the job (the file server's export flipped to ro after an error on its side)
SHARED33 = ("mkdir -p shared && (mountpoint -q shared && umount shared || true) && "
            "mount -t tmpfs -o size=64m b33_shared shared")
SCENARIOS += [
    Scenario("b33_st_ray_ckpt_readonly_remount", "train_demand.py", "python train_demand.py", setup=SHARED33,
             teardown="umount shared; true", env={**ENV33, "RAY_DEDUP_LOGS": "0"},
             action=("shell", "worker 0 epoch 1 step 50/200", "mount -o remount,ro shared")),
]
# the dataset volume (datasets/iq, 8 shards of 2,000 crops); on node 1 the mount did not come up, leaving the bare
# mount point (an empty directory) under the same path
IQ33 = r"""mkdir -p datasets/iq && python - <<'EOF2'
import numpy as np
for s in range(8):
    rng = np.random.default_rng(s)
    x = rng.random((2000, 3, 32, 32), dtype=np.float32)
    np.savez(f"datasets/iq/train-{s:03d}.npz", x=x, y=x.mean(axis=(1, 2, 3)).astype(np.float32))
EOF2"""
IQ33_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
           "--main_process_ip 127.0.0.1 --main_process_port {{port}} --mixed_precision no --dynamo_backend no "
           "train_iq.py")
SCENARIOS += [
    Scenario("b33_inf_data_mount_missing_accel_twonode_n1", "train_iq.py", IQ33_2N.format(k=0), cmd2=IQ33_2N.format(k=1),
             setup=IQ33, env=dict(ENV33), mask2="datasets/iq"),
]
# node 1's local cache directory is still locked by a process of the previous job on that node that never exited (it
# holds an exclusive flock on cache/node1/.lock); killed after the run with the recorder's ZOO_RUN sweep
LOCK33 = ("mkdir -p cache/node0 cache/node1 && (nohup python -c \"import fcntl, time; "
          "f = open('cache/node1/.lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(150)\" "
          ">/dev/null 2>&1 &) && sleep 0.5")
ADS33_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id ads-ctr-0923 train_ads.py")
SCENARIOS += [
    Scenario("b33_hang_stale_cache_lock_pyspy_twonode_n1", "train_ads.py", ADS33_2N,
             cmd2=ADS33_2N, setup=LOCK33, env={**ENV33, "LOCAL_CACHE": "cache/node0"},
             env2={"LOCAL_CACHE": "cache/node1"},
             action=("shell", "[rank 0] feature cache ready", PYSPY33.format(
                 f="train_ads.py", id="b33_hang_stale_cache_lock_pyspy_twonode_n1"))),
]
LOGTAG33_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {{port}} "
               "--log-dir logs/node{k} --tee 3 train_logtagger.py")
SCENARIOS += [
    # node 1's established TCP connections destroyed (ss -K) at its rank's step-400 line: node 1's link reset
    Scenario("b33_net_link_reset_logdir_twonode_n1", "train_logtagger.py", LOGTAG33_2N.format(k=0),
             cmd2=LOGTAG33_2N.format(k=1), env=dict(ENV33), action=("ss_kill", 1, "[rank1] step 400 loss")),
]

# ---- batch 34 (h155): common kinds in other launch shapes (a rank killed mid-run with a cascade, failures in
# checkpoint save and evaluation, two-node runs whose second node fails, hangs with one py-spy dump per rank,
# stragglers that are not rank 0); ids b34_* ----
ENV34 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # rank 2 runs under its container's 1,000 MiB memory limit; the evaluation all_gathers the whole passage corpus
    # (3 x 234 MB of embeddings) on every rank
    Scenario("b34_oom_eval_embed_cache_tee3_r2", "train_retriever.py",
             "torchrun --nproc-per-node 3 --master-port {port} --tee 3 train_retriever.py", env=dict(ENV34),
             action=("cgroup", 2, 1000)),
]
MT34_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
           "--rdzv-id mt-rev-0611 --log-dir logs/node{k} --tee 3 train_mt.py")
SCENARIOS += [
    # node 1 lost as a whole (agent and rank SIGKILLed: the machine went away) as its rank starts the step-100
    # sharded checkpoint save
    Scenario("b34_inf_node1_lost_dcp_save_c10d_twonode_n1", "train_mt.py", MT34_2N.format(k=0),
             cmd2=MT34_2N.format(k=1), env=dict(ENV34),
             action=("kill_node", 1, 9, "[rank1] step 100: saving checkpoint")),
]
# checkpoints/ is the job's checkpoint volume (a 12 MiB tmpfs named b34_ckpt here: the quota left on the project's
# volume); nothing deletes old checkpoints
CKPT34 = ("mkdir -p checkpoints && (mountpoint -q checkpoints && umount checkpoints || true) && "
          "mount -t tmpfs -o size=12m b34_ckpt checkpoints")
SCENARIOS += [
    Scenario("b34_st_enospc_safetensors_optim_spawn_r0", "train_vit.py", "python train_vit.py {port}", setup=CKPT34,
             teardown="umount checkpoints; true", env=dict(ENV34)),
]
# the ticket export, 4 parts of 480 tickets per rank; rank 1's third part came from the exporter's newer version,
# which gzip-compresses its output but kept the .jsonl name
TICKETS34 = r"""mkdir -p data && python - <<'EOF2'
import gzip, json, random
words = "printer vpn login password reset invoice refund laptop screen broken slow email outlook access denied".split()
for r in range(3):
    for k in range(4):
        rng = random.Random(100 * r + k)
        lines = [json.dumps({"id": f"T{r}{k}{i:05d}", "subject": " ".join(rng.choices(words, k=4)),
                             "body": " ".join(rng.choices(words, k=rng.randrange(10, 40)))}) for i in range(480)]
        raw = ("\n".join(lines) + "\n").encode()
        open(f"data/tickets-{r}-{k}.jsonl", "wb").write(gzip.compress(raw) if (r, k) == (1, 2) else raw)
EOF2"""
SCENARIOS += [
    Scenario("b34_data_gzip_as_jsonl_worker_pyrun_r1", "train_ticket_lm.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 "
             "train_ticket_lm.py", setup=TICKETS34, env=dict(ENV34)),
]
SCENARIOS += [
    # the launch line's --eval-batch-size 512 (raised from 128 to speed up validation) is larger than each rank's
    # 400 validation examples, and the validation loader drops the last incomplete batch
    Scenario("b34_cfg_eval_batch_dropped_zerodiv_tqdm", "train_headlines.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_headlines.py --train-batch-size 64 "
             "--eval-batch-size 512 --eval-every 150", env=dict(ENV34)),
]
SCENARIOS += [
    # Ray Train worker 1 SIGKILLed from outside during its epoch-1 evaluation
    Scenario("b34_inf_ray_sigkill_eval_r1", "train_recsys.py", "python train_recsys.py",
             env={**ENV34, "RAY_DEDUP_LOGS": "0"},
             action=("ray_kill", 1, signal.SIGKILL, "worker 1 epoch 1 evaluating")),
]
SCENARIOS += [
    # the predictions are gathered with accelerator.gather (the last batch padded by the even-batches sampler)
    # and written next to the 1,001 utterance ids with zip(..., strict=True) on the main process only
    Scenario("b34_uc_gather_padded_zip_strict_accel_r0", "train_intent.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --main_process_port {port} "
             "--mixed_precision no --dynamo_backend no train_intent.py", env=dict(ENV34)),
]
QLM34_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id query-lm-1207 train_query_lm.py")
SCENARIOS += [
    # node 1's process runs under its container's 1,400 MiB memory limit; the Trainer subclass keeps every batch's
    # softmaxed logits (8 MB) for an end-of-epoch calibration report
    Scenario("b34_oom_trainer_calib_logits_c10d_twonode_n1", "train_query_lm.py", QLM34_2N, cmd2=QLM34_2N,
             env=dict(ENV34), action=("cgroup", 1, 1400)),
]
# held-out articles per rank (12 each, 150-600 tokens); rank 1's part holds a 64-token stub article (a page cut by
# the dump's length filter)
DOCS34 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(5)
for r in range(2):
    lens = torch.randint(150, 600, (12,), generator=g).tolist()
    if r == 1:
        lens[7] = 64
    torch.save([torch.randint(0, 12000, (n,), generator=g) for n in lens], f"data/heldout-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b34_hang_eval_window_spin_pyspy_logdir_r1", "train_wikilm.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_wikilm.py", setup=DOCS34,
             env=dict(ENV34), action=("shell", "[rank 0] step 100: held-out eval", PYSPY33.format(
                 f="train_wikilm.py", id="b34_hang_eval_window_spin_pyspy_logdir_r1"))),
]
SED34_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id audio-events-77 --tee 3 train_audio_events.py")
SCENARIOS += [
    # node 1's process runs in a 800 MiB memory cgroup with the OOM killer disabled (its container was started with
    # --oom-kill-disable); the per-clip feature memo (24 KB a clip) grows without bound
    Scenario("b34_hang_oom_paused_c10d_twonode_n1", "train_audio_events.py", SED34_2N, cmd2=SED34_2N,
             env=dict(ENV34), action=("oom_pause", 1, 800)),
]
SCENARIOS += [
    # from rank 2's 'step 250/600' line on, rank 2 is stopped 100 ms of every 200 ms (SIGSTOP/SIGCONT: its host
    # throttled by a co-tenant's hypervisor steal)
    Scenario("b34_slow_stopcont_r2_pyrun_asctime", "train_fraud.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --tee 3 train_fraud.py",
             env=dict(ENV34), action=("stopcont_until", 2, "[rank 2] step 250/600", None, 100, 100)),
]
CHAT34_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id chat-lm-3 train_chat_lm.py")
SCENARIOS += [
    # from node 1's 'step 120/300' line on, node 1's process is held to 35 % of a core (cgroup v1 cfs quota: its
    # container's CPU limit lowered under it)
    Scenario("b34_slow_rank_quota_trainer_c10d_twonode_n1", "train_chat_lm.py", CHAT34_2N, cmd2=CHAT34_2N,
             env=dict(ENV34), action=("rank_quota", 1, "[node1] step 120/300", 35)),
]
SCENARIOS += [
    # from rank 3's epoch-0 summary on, rank 3's two DataLoader workers (not the rank) are held to 12 % of a core
    # (cgroup v1 cfs quota: the node's data-loading processes starved)
    Scenario("b34_slow_loader_quota_r3_4r_tqdm", "train_kws.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_kws.py", env=dict(ENV34),
             action=("worker_quota", 3, "rank 3 epoch 0 done", 12)),
]
DENOISE34_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
                "--main_process_ip 127.0.0.1 --main_process_port {{port}} --mixed_precision no --dynamo_backend no "
                "train_denoise.py")
SCENARIOS += [
    # each machine's process pinned to its own core; from node 1's 'step 125/300' line, four busy processes of
    # another tenant land on node 1's core
    Scenario("b34_slow_pinhog_accel_twonode_n1", "train_denoise.py", DENOISE34_2N.format(k=0),
             cmd2=DENOISE34_2N.format(k=1), env=dict(ENV34), action=("pin_hogx", 1, "[RANK 1] step 125/300", 4)),
]
# the vendored tile reader (a ctypes binding: the native decoder reads the payload at the offset the tile header
# gives, with no bounds check) and three packs of 1,600 4x32x32 tiles; in rank 1's pack tile 913's header was
# overwritten by a bad sector on the cache disk (its offset field is garbage)
TILES34 = r"""mkdir -p data && cat > tilecodec.py <<'EOF2'
import ctypes
import mmap
import struct

import numpy as np

_HDR = struct.Struct("<4sQIHHHH")  # magic, payload offset, payload length, bands, height, width, label


class PackReader:
    def __init__(self, path):
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        (self._n,) = struct.unpack_from("<I", mm, 0)
        self._buf = (ctypes.c_char * len(mm)).from_buffer_copy(mm)  # the pack, pinned for the native decoder
        self._base = ctypes.addressof(self._buf)

    def __len__(self):
        return self._n

    def decode(self, i):
        magic, off, length, bands, h, w, label = _HDR.unpack_from(self._buf, 4 + i * _HDR.size)
        raw = ctypes.string_at(self._base + off, length)
        return np.frombuffer(raw, dtype=np.uint8).reshape(bands, h, w), label
EOF2
python - <<'EOF2'
import struct
import numpy as np
hdr = struct.Struct("<4sQIHHHH")
for r in range(3):
    rng = np.random.default_rng(r)
    n = 1600
    payload_start = 4 + n * hdr.size
    heads, blobs = [], []
    for i in range(n):
        t = rng.integers(0, 256, (4, 32, 32), dtype=np.uint8)
        heads.append(hdr.pack(b"TILE", payload_start + i * t.nbytes, t.nbytes, 4, 32, 32, int(t.mean()) % 10))
        blobs.append(t.tobytes())
    if r == 1:
        heads[913] = hdr.pack(b"TILE", 0x3A5F00D2C41E7700, 4096, 4, 32, 32, 3)
    open(f"data/tiles-{r}.pack", "wb").write(struct.pack("<I", n) + b"".join(heads) + b"".join(blobs))
EOF2"""
SCENARIOS += [
    Scenario("b34_data_decoder_segv_main_logdir_r1", "train_landcover.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --redirects 3 train_landcover.py",
             setup=TILES34, env=dict(ENV34)),
]
# each rack's data mirror (an HTTP server per node, on the scenario's port + 3 and + 4, started here and killed
# after the run by the recorder's ZOO_RUN sweep): node 1's mirror serves two requests, then its backend hangs and
# it accepts connections but never answers
MIRROR34 = r"""mkdir -p mirror && python - <<'EOF2'
import numpy as np, os
for e in range(4):
    for r in range(2):
        os.makedirs(f"mirror/ctr/epoch{e:02d}", exist_ok=True)
        rng = np.random.default_rng(10 * e + r)
        x = rng.integers(0, 2**18, (20480, 24), dtype=np.int32)
        np.savez(f"mirror/ctr/epoch{e:02d}/part-{r:05d}.npz", x=x, y=(x[:, 0] % 7 == 0).astype(np.int8))
EOF2
cat > mirror_server.py <<'EOF2'
import http.server, sys, threading, time
served = [0]
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        served[0] += 1
        if int(sys.argv[2]) and served[0] > int(sys.argv[2]):
            threading.Event().wait()
        return super().do_GET()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), lambda *a: H(*a, directory="mirror")).serve_forever()
EOF2
(nohup python mirror_server.py {port_asset} 0 >/dev/null 2>&1 &)
(nohup python mirror_server.py $((ZOO_PORT + 4)) 2 >/dev/null 2>&1 &)
sleep 1"""
CTR34_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id ctr-daily-1207 --tee 3 train_ctr.py")
SCENARIOS += [
    Scenario("b34_hang_mirror_fetch_pyspy_c10d_twonode_n1", "train_ctr.py", CTR34_2N, cmd2=CTR34_2N,
             setup=MIRROR34, env={**ENV34, "DATA_MIRROR": "http://127.0.0.1:{port_asset}"},
             env2={"DATA_MIRROR": "http://127.0.0.1:{port_mirror1}"},
             action=("shell", "[rank 1] epoch 2: fetching shard", PYSPY33.format(
                 f="train_ctr.py", id="b34_hang_mirror_fetch_pyspy_c10d_twonode_n1"))),
]

# ---- batch 35 (h158): common kinds in the categories earlier batches have least of (network, config, framework,
# storage, gpu-free user code), hangs with one py-spy dump per rank, stragglers that are not rank 0; ids b35_* ----
ENV35 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # each Ray Train worker's hard-example replay buffer draws with random.randint(0, len(items)) (inclusive upper
    # bound); worker 1's draws hit the end first
    Scenario("b35_uc_ray_replay_randint_r1", "train_ctr_replay.py", "python train_ctr_replay.py",
             env={**ENV35, "RAY_DEDUP_LOGS": "0"}),
]
SPK35_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id spk-emb-1206 train_xvector.py --epochs 3 --grad-accum 2")
SCENARIOS += [
    # the LambdaLR schedule is stepped on every micro-batch but sized in optimizer steps (gradient accumulation 2):
    # past its end the square-root decay takes the root of a negative number
    Scenario("b35_uc_lr_lambda_domain_c10d_twonode", "train_xvector.py", SPK35_2N, cmd2=SPK35_2N, env=dict(ENV35)),
]
SCENARIOS += [
    # --ddp_find_unused_parameters false copied from the team's recipe; this run's intent-only data never uses the
    # slot head
    Scenario("b35_cfg_trainer_unused_false_logdir", "train_joint_nlu.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_joint_nlu.py "
             "--output_dir out/nlu --use_cpu --ddp_backend gloo --max_steps 300 --per_device_train_batch_size 32 "
             "--logging_steps 20 --save_strategy no --report_to none --ddp_find_unused_parameters false",
             env=dict(ENV35)),
]
SCENARIOS += [
    # a custom nn.Module with tied input/output embeddings; Trainer saves checkpoints as safetensors (its default)
    Scenario("b35_fw_trainer_tied_safetensors_tee3_r0", "train_query_lm.py",
             "torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_query_lm.py --max-steps 300 "
             "--save-steps 100", env=dict(ENV35)),
]
# the pretraining cluster exports its encoder with a newer PyTorch than this fine-tuning image's: the archive's
# format version record is 11 (this torch reads up to 10)
ENC35 = r"""mkdir -p pretrained && python - <<'EOF2'
import os
import zipfile
import torch
sd = {"conv.0.weight": torch.randn(128, 40, 5), "conv.0.bias": torch.zeros(128), "conv.2.weight": torch.randn(128, 128, 5),
      "conv.2.bias": torch.zeros(128), "proj.weight": torch.randn(128, 128), "proj.bias": torch.zeros(128)}
torch.save({"encoder": sd, "step": 412000, "exported_by": "pretrain-audio/v7"}, "pretrained/tmp.pt")
zin = zipfile.ZipFile("pretrained/tmp.pt")
with zipfile.ZipFile("pretrained/audio-encoder-v7.pt", "w", zipfile.ZIP_STORED) as zout:
    for it in zin.infolist():
        data = zin.read(it.filename)
        if it.filename.split("/", 1)[1] == "version":
            data = b"11\n"
        zout.writestr(it, data)
os.remove("pretrained/tmp.pt")
EOF2"""
SCENARIOS += [
    Scenario("b35_fw_ckpt_newer_torch_spawn", "finetune_kws.py", "python finetune_kws.py {port}", setup=ENC35,
             env=dict(ENV35)),
]
SCENARIOS += [
    # the run was started with 2 ranks and checkpointed at step 200 (by the setup, the same script); it is resumed
    # with 3 ranks after the job was given a bigger allocation
    Scenario("b35_cfg_resume_world3_loader_state_pyrun", "train_asr.py",
             "python -m torch.distributed.run --nproc_per_node 3 --master_port {port} --log-dir logs --tee 3 "
             "train_asr.py --steps 600 --resume ckpt/step_200",
             setup="torchrun --nproc-per-node 2 --master-port {port} train_asr.py --steps 200 >/dev/null 2>&1",
             env=dict(ENV35)),
]
# cache/ is the team's shared volume; a job killed two days earlier while it tokenized left its lock file behind
LOCK35 = ("mkdir -p cache && printf '{\"batch_size\": 64, \"lr\": 0.001}' > config.json && "
          "touch -d '2 days ago' cache/titles-tok-v3.pt.lock")
SCENARIOS += [
    Scenario("b35_st_stale_softlock_accel_r0", "train_titles.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --main_process_port {port} "
             "--mixed_precision no --dynamo_backend no train_titles.py", setup=LOCK35, env=dict(ENV35)),
]
# node 1's resolver view: its /etc/hosts (and no DNS) lacks the head node's name `vm`, which node 0 resolves
HOSTS35 = "printf '127.0.0.1 localhost\\n::1 localhost ip6-localhost\\n' > hosts.node1"
REC35_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint vm:{port} --rdzv-id gru4rec-77 "
            "--rdzv-conf join_timeout=30,read_timeout=15 --log-dir logs/node{k} --tee 3 train_gru4rec.py")
SCENARIOS += [
    Scenario("b35_net_c10d_dns_node1_logdir_twonode_n1", "train_gru4rec.py", REC35_2N.format(port="{port}", k=0),
             cmd2=REC35_2N.format(port="{port}", k=1), setup=HOSTS35, hosts2="hosts.node1", env=dict(ENV35)),
]
# node 1 in a network namespace of its own joined to this host by a veth pair (10.135.0.1 here = node 0, 10.135.0.2 =
# node 1): the nodes' data network; each node's GLOO_SOCKET_IFNAME comes from its profile
NET35 = ("ip netns del b35_n1 2>/dev/null; ip link del b35eth1 2>/dev/null; ip netns add b35_n1 && "
         "ip link add b35eth1 type veth peer name b35p && ip link set b35p netns b35_n1 && "
         "ip netns exec b35_n1 ip link set b35p name eth1 && ip addr add 10.135.0.1/24 dev b35eth1 && "
         "ip link set b35eth1 up && ip netns exec b35_n1 ip addr add 10.135.0.2/24 dev eth1 && "
         "ip netns exec b35_n1 ip link set eth1 up && ip netns exec b35_n1 ip link set lo up")
NET35_DOWN = "ip netns del b35_n1 2>/dev/null; ip link del b35eth1 2>/dev/null; true"
IQA35_2N = ("accelerate launch --multi_gpu --num_machines 2 --num_processes 2 --machine_rank {k} "
            "--main_process_ip 10.135.0.1 --main_process_port {port} --mixed_precision no --dynamo_backend no "
            "train_iqa.py")
SCENARIOS += [
    # from node 1's step-150 line every packet on node 1's data link is dropped, both ways (a switch port
    # blackholing the node's traffic; no reset, no error on the link)
    Scenario("b35_hang_net_blackhole_accel_twonode_n1", "train_iqa.py", IQA35_2N.format(port="{port}", k=0),
             cmd2=IQA35_2N.format(port="{port}", k=1), netns2="b35_n1", setup=NET35, teardown=NET35_DOWN,
             env={**ENV35, "GLOO_SOCKET_IFNAME": "b35eth1"}, env2={"GLOO_SOCKET_IFNAME": "eth1"},
             action=("shell", "[RANK 1] step 150/", "ip netns exec b35_n1 iptables -A INPUT -i eth1 -j DROP && "
                     "ip netns exec b35_n1 iptables -A OUTPUT -o eth1 -j DROP")),
]
# the team's experiment tracker (an HTTP service on the scenario's port + 3, started here, ended with the run by the
# recorder's ZOO_RUN sweep); after rank 0's step-180 line a firewall change starts dropping every packet to it (a
# chain of this batch's own on lo, removed in teardown); one py-spy dump per rank 8 s later
TRACKER35 = r"""echo {port_asset} > .tracker_port && cat > tracker.py <<'EOF2'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(b'{"ok": true}')
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
(nohup python tracker.py {port_asset} >/dev/null 2>&1 &)
sleep 1"""
DROP35 = ("iptables -N B35_TRK 2>/dev/null; iptables -C INPUT -j B35_TRK 2>/dev/null || iptables -I INPUT -j B35_TRK; "
          "iptables -A B35_TRK -i lo -p tcp --dport $(cat .tracker_port) -j DROP; ")
UNDROP35 = "iptables -D INPUT -j B35_TRK 2>/dev/null; iptables -F B35_TRK 2>/dev/null; iptables -X B35_TRK 2>/dev/null; true"
SCENARIOS += [
    Scenario("b35_hang_tracker_blackhole_pyspy_pyrun_r0", "train_churn.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_churn.py",
             setup=TRACKER35, teardown=UNDROP35, env={**ENV35, "TRACKER_URL": "http://127.0.0.1:{port_asset}"},
             action=("shell", "[rank 0] step 180 ", DROP35 + PYSPY33.format(
                 f="train_churn.py", id="b35_hang_tracker_blackhole_pyspy_pyrun_r0"))),
]
# the shared dataset volume (ext4 on a loop device, mounted fresh: nothing cached), one 64 MiB shard of log-mel
# patches per rank (read once through in 500 steps); from rank 1's step-200 line rank 1's reads from it are throttled
# to 2 MB/s (its node's path to the volume degraded)
MELS35 = ("truncate -s 200M shared.img && mkfs.ext4 -q shared.img && mkdir -p shared && mount -o loop shared.img shared && "
          "mkdir -p shared/mels && python -c \"import numpy as np\nfor r in range(2):\n"
          "    m = np.memmap(f'shared/mels/shard-{r:02d}.f16', dtype=np.float16, mode='w+', shape=(8192, 4096))\n"
          "    m[:] = np.random.default_rng(r).standard_normal(m.shape).astype(np.float16)\n    m.flush()\" && "
          "umount shared && mount -o loop shared.img shared")
SCENARIOS += [
    Scenario("b35_slow_st_blkio_read_r1_logdir_tqdm", "train_tagger.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_tagger.py", setup=MELS35,
             teardown="umount shared; true", env=dict(ENV35),
             action=("blkio_read", 1, "rank 1 step 200/500", "shared", 2000000)),
]
DUR35_2N = "python train_duration.py --node-rank {k} --master 10.135.0.1:{port} --steps 400"
SCENARIOS += [
    # from node 1's step-160 line node 1's uplink (its side of the veth, egress) is held to 200 Mbit/s by a token
    # bucket: the node's port renegotiated down / a rate limit applied on its host
    Scenario("b35_slow_net_tbf_spawn_twonode_n1", "train_duration.py", DUR35_2N.format(port="{port}", k=0),
             cmd2=DUR35_2N.format(port="{port}", k=1), netns2="b35_n1", setup=NET35, teardown=NET35_DOWN,
             env={**ENV35, "GLOO_SOCKET_IFNAME": "b35eth1"}, env2={"GLOO_SOCKET_IFNAME": "eth1"},
             action=("shell", "node1 rank1 INFO step 160/400", "ip netns exec b35_n1 tc qdisc add dev eth1 root tbf "
                     "rate 200mbit burst 256kb latency 50ms")),
]
# the export job's consolidated (full, unsharded) checkpoint of the model, written with torch.save
EXPORT35 = r"""mkdir -p export && python - <<'EOF2'
import sys
import torch
sys.argv = ["x"]
import importlib.util
spec = importlib.util.spec_from_file_location("lm", "train_tinylm.py")
lm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lm)
torch.manual_seed(3)
torch.save({"model": lm.TinyLM().state_dict(), "step": 24000}, "export/tinylm-step24000-full.pt")
EOF2"""
SCENARIOS += [
    Scenario("b35_fw_fsdp2_full_sd_load_plain", "train_tinylm.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_tinylm.py", setup=EXPORT35, env=dict(ENV35)),
]
SCENARIOS += [
    # the curriculum moves to 512-residue fragments at step 250; the model's learned position table has 256 rows
    Scenario("b35_uc_curriculum_posemb_redirects", "train_fraglm.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --redirects 3 train_fraglm.py "
             "--steps 400 --curriculum-step 250", env=dict(ENV35)),
]
SCENARIOS += [
    # the hard-negative sampler lowers a drawn item's weight by 5x and never restores it; rank 1's catalogue
    # partition (320 items) runs out of non-zero weights first
    Scenario("b35_uc_negsampler_decay_spawn_r1", "train_two_tower.py", "python train_two_tower.py {port}",
             env=dict(ENV35)),
]
# the first run (--epochs 3) was preempted during its second epoch (setup: the same script, its torchrun stopped once
# ckpt/epoch_1.pt is written); the user resumes from that checkpoint and asks for 4 epochs this time
PETS35 = ("torchrun --nproc-per-node 2 --master-port {port} train_pets.py --epochs 3 >/dev/null 2>&1 & pid=$!; "
          "until [ -f ckpt/epoch_1.pt ]; do sleep 0.2; done; sleep 1.5; kill -TERM $pid; wait $pid; rm -f ckpt/best.pt; "
          "sleep 1; true")
SCENARIOS += [
    Scenario("b35_cfg_resume_more_epochs_onecycle_tee3", "train_pets.py",
             "torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_pets.py --epochs 4 "
             "--resume ckpt/epoch_1.pt", setup=PETS35, env=dict(ENV35)),
]

# ---- batch 36 (h161): common weekly kinds in launch shapes earlier batches used little; hangs with one py-spy dump
# per rank, stragglers that are not rank 0; ids b36_* ----
ENV36 = {"OMP_NUM_THREADS": "1"}
# the previous run was launched with --compile and saved the compiled module's state dict (keys under `_orig_mod.`);
# this run resumes from it without --compile (compilation was too slow on the CPU pool)
CKPT36 = r"""mkdir -p ckpt && python - <<'EOF2'
import importlib.util
import sys
import torch
sys.argv = ["x"]
spec = importlib.util.spec_from_file_location("tc", "train_topics.py")
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)
torch.manual_seed(1)
model = torch.compile(tc.TopicClassifier())
opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 1800}, "ckpt/last.pt")
EOF2"""
SCENARIOS += [
    Scenario("b36_uc_compile_prefix_resume_accel", "train_topics.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --main_process_port {port} "
             "--mixed_precision no --dynamo_backend no train_topics.py --steps 3000 --resume ckpt/last.pt",
             setup=CKPT36, env=dict(ENV36)),
]
# 1,000 utterances' features, one .npy each; utt_00881 (rank 1's 441st with an unshuffled DistributedSampler) is
# an empty file: the sync from the feature store was interrupted while it copied that file
FEATS36 = r"""mkdir -p data/feats && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
with open("data/train.txt", "w") as fh:
    for i in range(1000):
        p = f"data/feats/utt_{i:05d}.npy"
        np.save(p, rng.standard_normal((40, 40)).astype(np.float32))
        fh.write(f"{p} {i % 12}\n")
open("data/feats/utt_00881.npy", "wb").close()
EOF2"""
SCENARIOS += [
    Scenario("b36_data_empty_npy_worker_logdir_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_kws.py", setup=FEATS36,
             env=dict(ENV36)),
]
# the team's recipe file was updated to the new warm-up convention (warmup_ratio); this script still reads
# warmup_steps
GRU36 = ("mkdir -p configs && printf 'lr: 0.002\\nweight_decay: 0.01\\nbatch_size: 128\\nsteps: 600\\n"
         "warmup_ratio: 0.05\\n' > configs/session_gru.yaml")
SCENARIOS += [
    Scenario("b36_cfg_ray_yaml_warmup_key", "train_session_gru.py", "python train_session_gru.py configs/session_gru.yaml",
             setup=GRU36, env={**ENV36, "RAY_DEDUP_LOGS": "0"}),
]
# rank 0's validation shard has 320 rows, rank 1's 321 (the split by store id is uneven): rank 1's last validation
# batch holds one row
HOUSES36 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(5)
w = torch.randn(32, generator=g)
for r, nv in ((0, 320), (1, 321)):
    for name, n in (("train", 4000), ("valid", nv)):
        x = torch.randn(n, 32, generator=g)
        torch.save({"x": x, "y": x @ w / 4 + 0.1 * torch.randn(n, generator=g)}, f"data/{name}-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b36_uc_squeeze_last_batch_spawn_r1", "train_prices.py", "python train_prices.py {port}",
             setup=HOUSES36, env=dict(ENV36)),
]
# node 1's container was started without a larger /dev/shm: a 1 MiB tmpfs there (the agent in a mount namespace of
# its own); node 0's is the host's
LEAF36_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id leaf-cls-36 --rdzv-conf join_timeout=30,read_timeout=15 train_leaf.py")
SCENARIOS += [
    Scenario("b36_st_shm_node1_c10d_twonode_n1", "train_leaf.py", LEAF36_2N, cmd2=LEAF36_2N, mask2="/dev/shm",
             env=dict(ENV36)),
]
SCENARIOS += [
    # rank 0's metrics flusher thread holds the registry's lock while it writes (and sleeps); the epoch-2 DataLoader
    # forks its workers while the lock is held, and the workers' Dataset calls METRICS.incr
    Scenario("b36_hang_fork_metrics_lock_pyspy_tee3_r0", "train_match.py",
             "torchrun --nproc-per-node 2 --master-port {port} --tee 3 train_match.py", env=dict(ENV36),
             action=("shell", "[rank0] epoch 2/3", PYSPY33.format(f="train_match.py",
                                                                   id="b36_hang_fork_metrics_lock_pyspy_tee3_r0"))),
]
# node 1 in a network namespace of its own joined to this host by a veth pair (10.136.0.1 = node 0, 10.136.0.2 =
# node 1)
NET36 = ("ip netns del b36_n1 2>/dev/null; ip link del b36eth1 2>/dev/null; ip netns add b36_n1 && "
         "ip link add b36eth1 type veth peer name b36p && ip link set b36p netns b36_n1 && "
         "ip netns exec b36_n1 ip link set b36p name eth1 && ip addr add 10.136.0.1/24 dev b36eth1 && "
         "ip link set b36eth1 up && ip netns exec b36_n1 ip addr add 10.136.0.2/24 dev eth1 && "
         "ip netns exec b36_n1 ip link set eth1 up && ip netns exec b36_n1 ip link set lo up")
NET36_DOWN = "ip netns del b36_n1 2>/dev/null; ip link del b36eth1 2>/dev/null; true"
ENH36_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 10.136.0.1 --master-port {port} "
            "train_enhance.py")
SCENARIOS += [
    # from node 1's step-160 line node 1's uplink (its side of the veth, egress) is held to 150 Mbit/s by a token
    # bucket: its port renegotiated to a lower speed
    Scenario("b36_slow_net_tbf_static_twonode_n1", "train_enhance.py", ENH36_2N.format(port="{port}", k=0),
             cmd2=ENH36_2N.format(port="{port}", k=1), netns2="b36_n1", setup=NET36, teardown=NET36_DOWN,
             env={**ENV36, "GLOO_SOCKET_IFNAME": "b36eth1"}, env2={"GLOO_SOCKET_IFNAME": "eth1"},
             action=("shell", "node1 rank1 INFO step 160/400", "ip netns exec b36_n1 tc qdisc add dev eth1 root tbf "
                     "rate 150mbit burst 256kb latency 50ms")),
]
SCENARIOS += [
    # from rank 1's step-200 line rank 1 (and its threads) is held to 30 % of one core (its container's CPU limit
    # lowered / a neighbour's share)
    Scenario("b36_slow_rank_quota_plain_r1", "train_charlm.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_charlm.py", env=dict(ENV36),
             action=("rank_quota", 1, "rank 1 step 200/500", 30)),
]
# each worker's JSON-lines shard of labelled queries (3,000 records); record 4,107 of the export (rank 1's 1,107th)
# came from the new annotation tool, which writes the label under "label" instead of "intent"
INTENTS36 = r"""mkdir -p data && python - <<'EOF2'
import json
import random
rnd = random.Random(3)
labels = ["weather", "music", "alarm", "navigation", "shopping", "news", "timer", "smalltalk"]
words = "play set the a for me what is tomorrow rain song alarm at route home buy milk latest headlines minutes".split()
for r in range(2):
    with open(f"data/part-{r}.jsonl", "w") as fh:
        for i in range(3000):
            rec = {"id": f"q{r}-{i:05d}", "text": " ".join(rnd.choice(words) for _ in range(rnd.randint(3, 9))),
                   "intent": rnd.choice(labels)}
            if r == 1 and i == 1107:
                rec["label"] = rec.pop("intent")
            fh.write(json.dumps(rec) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b36_hang_ray_prefetch_thread_r1", "train_intents.py", "python train_intents.py", setup=INTENTS36,
             env={**ENV36, "RAY_DEDUP_LOGS": "0"}),
]
SCENARIOS += [
    # rank 1 runs in a memory cgroup (v1) of 900 MiB (its container's limit); the evaluation keeps every batch's
    # logits (256 x 64 x 16,000 floats, ~1 GiB)
    Scenario("b36_oom_eval_logits_pyrun_r1", "train_tinylm.py",
             "python -m torch.distributed.run --nproc_per_node 2 --master_port {port} --tee 3 train_tinylm.py",
             env=dict(ENV36), action=("cgroup", 1, 900)),
]
# ---- batch 37 (h164): common weekly kinds in logging styles and launch shapes earlier batches used little (JSON-lines
# and key=value logs, rich's RichHandler, transformers.Trainer, 3-4 ranks, two torchrun agents as two nodes); hangs
# with a rank stuck outside a collective, stragglers that are not rank 0; ids b37_* ----
ENV37 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # the model returns its pooled embedding next to the logits, so Trainer hands compute_metrics a tuple
    Scenario("b37_uc_trainer_metrics_tuple_rich_3r", "train_sentiment.py",
             "torchrun --nproc-per-node 3 --master-port {port} --tee 3 train_sentiment.py", env=dict(ENV37)),
]
# the warehouse's daily export, one CSV part per rank and day; in 2026-11-29's part-00002 one store's humidity sensor
# was offline and the export wrote the literal N/A
CSV37 = r"""python - <<'EOF2'
import csv, os, random
rnd = random.Random(7)
cols = [f"lag_{k}" for k in range(1, 13)] + ["temp_c", "humidity", "is_holiday", "demand"]
for d, day in enumerate(["2026-11-28", "2026-11-29", "2026-11-30"]):
    os.makedirs(f"data/dt={day}", exist_ok=True)
    for r in range(4):
        with open(f"data/dt={day}/part-{r:05d}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for i in range(5120):
                lags = [round(rnd.uniform(20, 80), 2) for _ in range(12)]
                row = lags + [round(rnd.uniform(-5, 15), 1), round(rnd.uniform(30, 95), 1), int(rnd.random() < 0.05)]
                if d == 1 and r == 2 and i == 1411:
                    row[13] = "N/A"
                w.writerow(row + [round(sum(lags) / 12 + rnd.gauss(0, 3), 2)])
EOF2"""
SCENARIOS += [
    Scenario("b37_data_csv_na_kv_logdir_4r_r2", "train_demand.py",
             "torchrun --nproc-per-node 4 --master-port {port} --log-dir logs --redirects 3 train_demand.py",
             setup=CSV37, env=dict(ENV37)),
]
SEARCH37_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
               "--rdzv-id prodsearch-37 --rdzv-conf join_timeout=30,read_timeout=15 train_search.py")
SCENARIOS += [
    # node 1's container has a 700 MiB memory limit (a memory cgroup v1 on its rank); node 0's pool has more memory.
    # The evaluation builds the full 12,000 x 12,000 similarity matrix (~550 MiB) on every rank
    Scenario("b37_oom_recall_simmatrix_jsonl_twonode_n1", "train_search.py", SEARCH37_2N, cmd2=SEARCH37_2N,
             env=dict(ENV37), action=("cgroup", 1, 700)),
]
# the run config was copied from the 2-process workstation recipe: "world_size": 2 under "distributed"
TAGCFG37 = r"""mkdir -p configs && cat > configs/tagger_ft.json <<'EOF2'
{
  "seed": 17,
  "lr": 0.05,
  "batch_size": 32,
  "epochs": 2,
  "train_size": 4096,
  "num_tags": 40,
  "distributed": {"backend": "gloo", "world_size": 2, "timeout_s": 25}
}
EOF2"""
SCENARIOS += [
    Scenario("b37_cfg_sampler_replicas_jsonl_pyrun_4r", "train_tagger.py",
             "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train_tagger.py "
             "configs/tagger_ft.json", setup=TAGCFG37, env=dict(ENV37)),
]
# the team volume at ./checkpoints (a 32 MiB tmpfs standing in for the project's quota) still holds the previous
# run's two checkpoints (no save_total_limit): ~10 MiB free, less than one checkpoint (model 3.6 MB + optimizer 7.3 MB)
CKPTVOL37 = r"""mkdir -p checkpoints && mount -t tmpfs -o size=32m tmpfs checkpoints && python - <<'EOF2'
import os
for step in (1450, 1500):
    d = f"checkpoints/ticket-lm/checkpoint-{step}"
    os.makedirs(d)
    for name, size in (("model.safetensors", 3654280), ("optimizer.pt", 7326619), ("scheduler.pt", 1465)):
        with open(f"{d}/{name}", "wb") as fh:
            fh.write(os.urandom(size))
EOF2"""
TICKET37_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
               "train_ticket_lm.py")
SCENARIOS += [
    Scenario("b37_st_trainer_ckpt_enospc_jsonl_twonode_n0", "train_ticket_lm.py",
             TICKET37_2N.format(port="{port}", k=0), cmd2=TICKET37_2N.format(port="{port}", k=1), setup=CKPTVOL37,
             teardown="umount checkpoints; true", env=dict(ENV37)),
]
# rank 2's shard holds one utterance of a speaker with no other utterance there (anchor 2,245, step 71); one py-spy
# dump per rank 8 s after rank 2's step-70 line
SPK37 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(0)
for r in range(3):
    spk = torch.arange(6400) % 50
    spk = spk[torch.randperm(6400, generator=g)]
    if r == 2:
        spk[32 * 70 + 5] = 50
    torch.save({"feats": torch.randn(6400, 80, generator=g), "speaker": spk}, f"data/spk_shard{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b37_hang_positive_sampler_loop_rich_logdir_r2", "train_spk.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_spk.py", setup=SPK37,
             env=dict(ENV37),
             action=("shell", "[rank2] ep 0 step 70/200", PYSPY33.format(
                 f="train_spk.py", id="b37_hang_positive_sampler_loop_rich_logdir_r2"))),
]
# node 1 was restarted after a preemption and re-joined the same job name: its metrics/rank1.jsonl from the previous
# attempt (250 KiB) is still there, so rank 1's writer crosses the 256 KiB rotation threshold at about step 60
METRICS37 = r"""mkdir -p metrics && python - <<'EOF2'
import json, random
rnd = random.Random(1)
with open("metrics/rank1.jsonl", "w") as fh:
    step = 0
    while fh.tell() < 256 * 1024 - 6000:
        step += 1
        fh.write(json.dumps({"step": step, "loss": round(0.6 - step * 1e-4 + rnd.random() * 0.01, 5), "lr": 0.05,
                             "ts": round(1796520000 + step * 0.05, 3), "node": "1", "examples": 512 * step}) + "\n")
EOF2"""
CTR37_2N = ("torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id ctr-37 --rdzv-conf join_timeout=30,read_timeout=15 train_ctr.py")
SCENARIOS += [
    Scenario("b37_hang_metrics_rotate_lock_kv_twonode_n1", "train_ctr.py", CTR37_2N, cmd2=CTR37_2N, setup=METRICS37,
             env=dict(ENV37)),
]
FRAUD37_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
              "train_fraud.py")
SCENARIOS += [
    # each node's rank pinned to its own core (node k -> core k); from node 1's step-200 line another tenant's busy
    # processes run on node 1's core
    Scenario("b37_slow_pinhog_rich_static_twonode_n1", "train_fraud.py", FRAUD37_2N.format(port="{port}", k=0),
             cmd2=FRAUD37_2N.format(port="{port}", k=1), env=dict(ENV37),
             action=("pin_hogx", 1, "node1 step 200/600", 2)),
    # from rank 0's step-100 line the whole job (every rank) is held to 85 % of one core (the pod's CPU limit lowered
    # by the quota controller); measured beforehand: the job used ~1.26 cores of this shared host
    Scenario("b37_slow_job_quota_trainer_jsonl_3r", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py", env=dict(ENV37),
             action=("quota_until", '"rank": 0, "global_step": 100,', None, 85)),
    # from rank 3's step-80 line rank 3's two DataLoader workers (decode + augment) share 20 % of one core
    Scenario("b37_slow_loader_quota_kv_4r_r3", "train_iqa.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_iqa.py", env=dict(ENV37),
             action=("worker_quota", 3, "rank=3 step=80/200", 20)),
]
# ---- batch 38 (h167): weekly kinds earlier batches used little (a node's open-files limit, an environment variable
# missing on one node, optimizer state resumed into reordered parameters, a GPU checkpoint on the CPU pool, Ray Train's
# worker working directory; hangs on a dead producer thread's queue, a barrier skipped by a rank with a cache, a stale
# MASTER_PORT on one node); ids b38_* ----
import os  # noqa: E402 (batch 38: the recorder's work dir, for node 1's profile value)
from pathlib import Path  # noqa: E402

ENV38 = {"OMP_NUM_THREADS": "1"}
WORK38 = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))
# 3,000 packed shard files of 4 sequences x 128 uint16 ids (1 KiB each)
PACKED38 = r"""mkdir -p data/packed && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(0)
for k in range(3000):
    rng.integers(0, 256, 4 * 128, dtype=np.uint16).tofile(f"data/packed/shard-{k:05d}.bin")
EOF2"""
# node 1's container runtime starts processes with a soft/hard open-files limit of 1024/4096 (node 0 has this host's
# 20000): applied to node 1's agent 0.3 s after it starts, before it spawns its worker
NOFILE38 = ("for d in /proc/[0-9]*; do tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -qx 'ZOO_RUN={id}' || continue; "
            "tr '\\0' ' ' < $d/cmdline | grep -q -- '--node-rank 1 ' || continue; "
            "prlimit --pid ${{d#/proc/}} --nofile=1024:4096 && echo \"  nofile: node 1 agent ${{d#/proc/}}\" >&2; done")
BYTELM38_2N = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
               "train_bytelm.py")
SCENARIOS += [
    Scenario("b38_inf_nofile_node1_static_twonode_n1", "train_bytelm.py", BYTELM38_2N.format(port="{port}", k=0),
             cmd2=BYTELM38_2N.format(port="{port}", k=1), setup=PACKED38, env=dict(ENV38),
             action=("shell", 0.3, NOFILE38.format(id="b38_inf_nofile_node1_static_twonode_n1"))),
]
# the team's path config uses $DATASET_ROOT; node 1's profile exports it, node 0 (a node added to the pool this
# week) has no such line
TOWERS38 = r"""mkdir -p configs datasets/wiki-tok/v2/train && cat > configs/paths.json <<'EOF2'
{
  "train_tokens": "$DATASET_ROOT/wiki-tok/v2/train",
  "output_dir": "runs/towers-v2"
}
EOF2
python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(1)
for r in range(4):
    np.save(f"datasets/wiki-tok/v2/train/part-{r:05d}.npy", rng.integers(1, 32000, (8192, 32), dtype=np.int32))
EOF2"""
TOWERS38_2N = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
               "--rdzv-id towers-v2 --rdzv-conf join_timeout=30,read_timeout=15 train_towers.py")
SCENARIOS += [
    Scenario("b38_cfg_env_unset_node0_jsonl_c10d_twonode_n0", "train_towers.py", TOWERS38_2N, cmd2=TOWERS38_2N,
             setup=TOWERS38, env=dict(ENV38),
             env2={"DATASET_ROOT": str(WORK38 / "b38_cfg_env_unset_node0_jsonl_c10d_twonode_n0" / "datasets")}),
]
# the checkpoint of the previous run (step 1500), written while the class declared the encoder before the head
INTENT38 = r"""mkdir -p ckpt && python - <<'EOF2'
import torch
import torch.nn as nn
class IntentModel(nn.Module):
    def __init__(self, vocab=8000, d=96, hidden=192, n_intents=24):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, d, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, n_intents)
    def forward(self, x):
        return self.head(self.encoder(self.embed(x)))
torch.manual_seed(0)
m = IntentModel()
opt = torch.optim.AdamW(m.parameters(), lr=2e-3, weight_decay=0.01)
for _ in range(3):
    x = torch.randint(0, 8000, (64, 20))
    loss = nn.functional.cross_entropy(m(x), x[:, 0] % 24)
    opt.zero_grad(); loss.backward(); opt.step()
torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 1500}, "ckpt/last.pt")
EOF2"""
SCENARIOS += [
    Scenario("b38_uc_adam_state_param_order_resume_accel", "train_intents.py",
             "accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --main_process_port {port} "
             "--mixed_precision no --dynamo_backend no train_intents.py --resume ckpt/last.pt",
             setup=INTENT38, env=dict(ENV38)),
]
# the encoder checkpoint as the GPU cluster's pre-training job saved it (its storages tagged cuda:0); here written
# on this CPU host and re-tagged in the archive's pickle
KWS38 = r"""mkdir -p pretrained && python - <<'EOF2'
import zipfile
import torch
import torch.nn as nn
enc = nn.Sequential(nn.Conv1d(40, 128, 5, padding=2), nn.ReLU(), nn.Conv1d(128, 128, 5, padding=2), nn.ReLU())
sd = {"conv." + k: v for k, v in enc.state_dict().items()}
torch.save({"encoder": sd, "epoch": 40, "val_acc": 0.947}, "pretrained/cpu.pt")
zin = zipfile.ZipFile("pretrained/cpu.pt")
with zipfile.ZipFile("pretrained/kws_encoder_e40.pt", "w", compression=zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith("data.pkl"):
            data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
        zout.writestr(info, data)
EOF2
rm pretrained/cpu.pt"""
SCENARIOS += [
    Scenario("b38_uc_gpu_ckpt_no_map_location_jsonl_spawn", "train_kws.py", "python train_kws.py {port}",
             setup=KWS38, env=dict(ENV38)),
]
RATINGS38 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(0)
n = 200000
torch.save({"user": torch.randint(0, 6040, (n,), generator=g), "item": torch.randint(0, 3706, (n,), generator=g),
            "rating": torch.randint(1, 6, (n,), generator=g).float()}, "data/ratings-train.pt")
EOF2"""
SCENARIOS += [
    Scenario("b38_uc_ray_relative_data_path_workers", "train_mf.py", "python train_mf.py", setup=RATINGS38,
             env={**ENV38, "RAY_DEDUP_LOGS": "0"}),
]
# per-rank transcripts: 640 examples in each of the 16/32/64-token buckets; ranks 0 and 1 have 64 examples longer
# than 64 tokens, rank 2 only 20 (fewer than one batch of 32)
TRANSCRIPTS38 = r"""mkdir -p data && python - <<'EOF2'
import random
import torch
rnd = random.Random(4)
for r in range(3):
    ex = []
    for lo, hi, n in ((4, 16, 640), (17, 32, 640), (33, 64, 640), (65, 128, 20 if r == 2 else 64)):
        for _ in range(n):
            ex.append(([rnd.randint(1, 4999) for _ in range(rnd.randint(lo, hi))], rnd.randint(0, 15)))
    rnd.shuffle(ex)
    torch.save(ex, f"data/transcripts-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b38_hang_bucket_thread_queue_get_logdir_r2", "train_bucketed.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_bucketed.py",
             setup=TRANSCRIPTS38, env=dict(ENV38)),
]
# the previous attempt was preempted after rank 3 had written its token cache (cache/tok-3.pt); the other ranks'
# caches were never written
SNIPPETS38 = r"""mkdir -p data cache && python - <<'EOF2'
import random
import torch
rnd = random.Random(8)
words = "def return self if else for in range len None import from class try except raise with as yield lambda".split()
names = ["x", "y", "idx", "buf", "path", "model", "cfg", "batch", "loss", "out", "tmp", "n", "i", "j", "data"]
with open("data/snippets.txt", "w") as fh:
    for _ in range(60000):
        toks = [rnd.choice(words + names) for _ in range(rnd.randint(6, 40))]
        fh.write(" ".join(toks) + "(" + rnd.choice(names) + ")\n")
torch.save([[rnd.randint(1, 16383) for _ in range(rnd.randint(8, 40))] for _ in range(15000)], "cache/tok-3.pt")
EOF2"""
SCENARIOS += [
    Scenario("b38_hang_cached_rank_skips_barrier_jsonl_redirects_4r_r3", "train_codesearch.py",
             "torchrun --nproc-per-node 4 --master-port {port} --log-dir logs --redirects 3 train_codesearch.py",
             setup=SNIPPETS38, env=dict(ENV38)),
]
# the job exports MASTER_ADDR / MASTER_PORT on both nodes; node 1's shell profile still exports the MASTER_PORT of
# an older job, which wins there ({port_mirror1}: nothing listens on it)
CLICK38 = "python train_click.py --nnodes 2 --node-rank {k} --nproc-per-node 2"
SCENARIOS += [
    Scenario("b38_hang_master_port_env_node1_spawn_twonode_n1", "train_click.py", CLICK38.format(k=0),
             cmd2=CLICK38.format(k=1), env={**ENV38, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"},
             env2={"MASTER_PORT": "{port_mirror1}"}),
]
# ---- batch 39 (h170): failures in the way jobs are launched and logged on real clusters (a `srun -l` wrapper,
# PyTorchJob-like pods with one timestamped log file each, torch.multiprocessing.spawn with a log file per rank,
# python logging with the rank in the logger name, `accelerate launch --config_file`, transformers.Trainer with
# gradient accumulation); ids b39_* ----
WORK39 = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))
ENV39 = {"OMP_NUM_THREADS": "1"}


def _path39(sid: str) -> str:
    """The job's PATH: the cluster's own tools (bin/ of the work dir: srun, podrun) before the venv's."""
    return f"{WORK39 / sid / 'bin'}:/work/main/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# the single-node test cluster's srun (a stand-in): tasks, -l labels, -K, the task prolog's RANK/WORLD_SIZE
SRUN39 = r"""
#!/usr/bin/env python3
'''srun as this single-node test cluster provides it: -n/--ntasks tasks on node01, -l/--label prefixes every
line with the task number, -K/--kill-on-bad-exit ends the step when a task fails. The node's task prolog exports
RANK / LOCAL_RANK / WORLD_SIZE from SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS.'''
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
label, ntasks, kill_bad = False, 1, False
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a in ("-l", "--label"):
        label = True
    elif a in ("-K", "--kill-on-bad-exit"):
        kill_bad = True
    elif a.startswith("--kill-on-bad-exit="):
        kill_bad = a.split("=", 1)[1] != "0"
    elif a in ("-n", "--ntasks"):
        ntasks = int(args.pop(0))
    elif a.startswith("--ntasks="):
        ntasks = int(a.split("=", 1)[1])
    elif a in ("-N", "--nodes", "-J", "--job-name", "-c", "--cpus-per-task"):
        args.pop(0)
jobid = os.environ.get("SLURM_JOB_ID", "48213")
node = "node01"
out_lock = threading.Lock()


def pump(r, stream):
    pre = f"{r}: ".encode() if label else b""
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with out_lock:
            sys.stdout.buffer.write(pre + line)
            sys.stdout.buffer.flush()


def say(msg):
    with out_lock:
        sys.stdout.buffer.write((msg + "\n").encode())
        sys.stdout.buffer.flush()


procs, pumps = [], []
for r in range(ntasks):
    env = dict(os.environ, SLURM_PROCID=str(r), SLURM_LOCALID=str(r), SLURM_NTASKS=str(ntasks), SLURM_NNODES="1",
               SLURM_NODEID="0", SLURMD_NODENAME=node, SLURM_JOB_ID=jobid, SLURM_STEP_ID="0",
               SLURM_STEP_NUM_TASKS=str(ntasks), RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ntasks))
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    procs.append(p)
    t = threading.Thread(target=pump, args=(r, p.stdout), daemon=True)
    t.start()
    pumps.append(t)
done, failed, killed_at = {}, False, None
while len(done) < ntasks:
    for r, p in enumerate(procs):
        if r in done or p.poll() is None:
            continue
        done[r] = p.returncode
        pumps[r].join(2)
        rc = p.returncode
        if rc > 0:
            say(f"srun: error: {node}: task {r}: Exited with exit code {rc}")
        elif rc < 0:
            name = {9: "Killed", 15: "Terminated", 6: "Aborted", 11: "Segmentation fault",
                    7: "Bus error"}.get(-rc, f"signal {-rc}")
            say(f"srun: error: {node}: task {r}: {name}")
        if rc != 0 and kill_bad and not failed:
            failed = True
            say(f"srun: Terminating StepId={jobid}.0")
            now = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
            say(f"slurmstepd: error: *** STEP {jobid}.0 ON {node} CANCELLED AT {now} ***")
            for q in procs:
                if q.poll() is None:
                    q.send_signal(signal.SIGTERM)
            killed_at = time.time()
    if killed_at and time.time() - killed_at > 30:
        for q in procs:
            if q.poll() is None:
                q.kill()
    time.sleep(0.05)
sys.exit(max((abs(c) for c in done.values()), default=0))
"""
# the team's PyTorchJob stand-in: one process per pod, kubectl-logs-style timestamped file per pod
PODRUN39 = r"""
#!/usr/bin/env python3
'''podrun: the team's stand-in for submitting a PyTorchJob on this single-node test cluster and following it.

    podrun --job NAME --replicas N [--log-dir DIR] -- COMMAND ...

One process per pod (NAME-worker-0 .. NAME-worker-{N-1}), each with the environment the training operator gives
a pod (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, HOSTNAME); each pod's output is written to
DIR/NAME-worker-K.log as `kubectl logs --timestamps` shows it (RFC 3339 time, nanoseconds, then the line). The
terminal shows the pods' phases and the job's condition. Pods run under the namespace's security policy
(PODRUN_POLICY=restricted: capabilities dropped).'''
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
job, replicas, log_dir = "job", 1, "logs"
while args and args[0] != "--":
    a = args.pop(0)
    if a == "--job":
        job = args.pop(0)
    elif a == "--replicas":
        replicas = int(args.pop(0))
    elif a == "--log-dir":
        log_dir = args.pop(0)
args.pop(0)
os.makedirs(log_dir, exist_ok=True)


def stamp():
    ns = time.time_ns()
    dt = datetime.datetime.fromtimestamp(ns // 1_000_000_000, tz=datetime.timezone.utc)
    return f"{dt:%Y-%m-%dT%H:%M:%S}.{ns % 1_000_000_000:09d}Z"


def event(msg):
    sys.stdout.write(f"{stamp()[:19]}Z  {msg}\n")
    sys.stdout.flush()


def pump(stream, path):
    with open(path, "ab", buffering=0) as fh:
        for line in iter(stream.readline, b""):
            if not line.endswith(b"\n"):
                line += b"\n"
            fh.write(stamp().encode() + b" " + line)


policy = os.environ.get("PODRUN_POLICY", "")
prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"] if policy == "restricted" else []
print(f"pytorchjob.kubeflow.org/{job} created", flush=True)
procs, pumps = [], []
for k in range(replicas):
    pod = f"{job}-worker-{k}"
    env = dict(os.environ, RANK=str(k), WORLD_SIZE=str(replicas), HOSTNAME=pod, PYTHONUNBUFFERED="1")
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.pop("PODRUN_POLICY", None)
    p = subprocess.Popen(prefix + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    procs.append((pod, p))
    t = threading.Thread(target=pump, args=(p.stdout, os.path.join(log_dir, f"{pod}.log")), daemon=True)
    t.start()
    pumps.append(t)
    event(f"pod/{pod}  Pending -> Running")
done, failed = set(), 0
while len(done) < replicas:
    for k, (pod, p) in enumerate(procs):
        if k in done or p.poll() is None:
            continue
        done.add(k)
        pumps[k].join(2)
        rc = p.returncode
        if rc == 0:
            event(f"pod/{pod}  Running -> Succeeded (Completed, exit code 0)")
            continue
        failed += 1
        event(f"pod/{pod}  Running -> Failed (Error, exit code {rc if rc > 0 else 128 - rc})")
        if failed == 1:
            event(f"pytorchjob/{job}  Failed: PyTorchJob {job} is failed because 1 Worker replica(s) failed.")
            running = [(q, pp) for j, (q, pp) in enumerate(procs) if j not in done and pp.poll() is None]
            if running:
                event("deleting running pods (cleanPodPolicy: Running): " + ", ".join(q for q, _ in running))
                for _, pp in running:
                    pp.send_signal(signal.SIGTERM)
    time.sleep(0.05)
if not failed:
    event(f"pytorchjob/{job}  Succeeded: PyTorchJob {job} is successfully completed.")
sys.exit(1 if failed else 0)
"""
# the team's feature gateway (a stand-in), paced per client by gateway_qos.json
GATEWAY39 = r"""
'''The team's feature gateway (a stand-in): serves pre-built dense feature batches per shard over HTTP, each
client's responses paced to the per-client bandwidth in gateway_qos.json (re-read every request; 0 = unlimited).'''
import io
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

rng = np.random.default_rng(0)
W = rng.standard_normal(512).astype(np.float32)
CACHE = {}


def batch(shard, i):
    key = (shard, i % 50)
    if key not in CACHE:
        r = np.random.default_rng(shard * 1000 + i % 50)
        x = r.standard_normal((256, 512)).astype(np.float32)
        y = (x @ W + r.standard_normal(256).astype(np.float32) > 0).astype(np.float32)
        buf = io.BytesIO()
        np.savez(buf, x=x, y=y)
        CACHE[key] = buf.getvalue()
    return CACHE[key]


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        parts = self.path.strip("/").split("/")
        body = batch(int(parts[3]), int(parts[5]))
        try:
            bps = json.load(open("gateway_qos.json"))["per_client_bytes_per_s"]
        except (OSError, ValueError, KeyError):
            bps = 0
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        chunk = 65536
        for off in range(0, len(body), chunk):
            t0 = time.time()
            self.wfile.write(body[off:off + chunk])
            if bps:
                time.sleep(max(0.0, len(body[off:off + chunk]) / bps - (time.time() - t0)))

    def log_message(self, *a):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""
# the Slurm job's task wrapper: decompress the task's shard into a named pipe, then train
RUNTASK39 = r"""
#!/bin/bash
# task wrapper: feed this task's shard into its pipe, then start training
mkdir -p pipes
pipe=pipes/part-$(printf %02d "$SLURM_PROCID")
rm -f "$pipe" && mkfifo "$pipe"
zcat "data/queries-$(printf %02d "$SLURM_PROCID").jsonl.gz" > "$pipe" &
exec python train_intent_stream.py
"""


QOS39 = 64_000_000  # the gateway's per-client bytes/s after the QoS change (64 MB/s; see the label's note)
QUOTA39 = 30  # rank 1's CPU quota, % of one core


def _tool39(name: str, text: str) -> str:
    """Setup lines writing one of the cluster's tools into bin/ (executable)."""
    return f"mkdir -p bin && cat > bin/{name} <<'EOF_TOOL39'\n{text.lstrip()}EOF_TOOL39\nchmod +x bin/{name}\n"


# 1,600 quantised 12-band 64x64 patches per rank (uint8), per-band mean/std
PATCHES39 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(3)
for r in range(3):
    x = rng.integers(0, 256, (1600, 12, 64, 64), dtype=np.uint8)
    np.savez(f"data/eurosat_part{r}.npz", patches=x, labels=rng.integers(0, 10, 1600),
             mean=np.full(12, 0.5), std=np.full(12, 0.29))
EOF2"""
SCENARIOS += [
    # the Slurm step's memory cgroup (--mem-per-cpu) is tighter than the workers' decoded-patch caches: from rank 1's
    # step-10 line its two DataLoader workers are in a 600 MiB memory cgroup (v1) and the kernel OOM-kills one
    Scenario("b39_oom_worker_memcg_srun_r1", "train_landcover.py",
             "srun -l -K --ntasks 3 python train_landcover.py", setup=_tool39("srun", SRUN39) + PATCHES39,
             env={**ENV39, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "SLURM_JOB_ID": "48213",
                  "PATH": _path39("b39_oom_worker_memcg_srun_r1")},
             action=("worker_cgroup", 1, 600, "1: rank 1 epoch 0 step 10 ")),
]
# 40,000 search queries per task shard (gzip JSON lines)
QUERIES39 = r"""mkdir -p data && python - <<'EOF2'
import gzip, json, random
rnd = random.Random(5)
words = ("cheap flights to paris hotel near airport reset my password track order refund status weather "
         "tomorrow play jazz music set alarm for 7 how tall is everest convert usd to eur cancel subscription "
         "open hours pharmacy nearby book table for two translate hello to spanish").split()
for r in range(3):
    with gzip.open(f"data/queries-{r:02d}.jsonl.gz", "wt") as fh:
        for i in range(40000):
            q = " ".join(rnd.choice(words) for _ in range(rnd.randint(2, 9)))
            fh.write(json.dumps({"id": f"{r}-{i}", "query": q, "intent": rnd.randint(0, 31)}) + "\n")
EOF2"""
# the node stops task 1's decompressor (a process frozen on the node: SIGSTOP, never continued) once task 1 has
# logged step 40
FIFOSTOP39 = ("for d in /proc/[0-9]*; do tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -qx 'ZOO_RUN={id}' || continue; "
              "tr '\\0' '\\n' < $d/environ | grep -qx 'SLURM_PROCID=1' || continue; "
              "grep -qE '^(gzip|zcat)$' $d/comm || continue; "
              "kill -STOP ${{d#/proc/}} && echo \"  fifo: task 1 decompressor ${{d#/proc/}} stopped\" >&2; done")
SCENARIOS += [
    Scenario("b39_hang_fifo_stream_srun_r1", "train_intent_stream.py", "srun -l -K --ntasks 3 ./run_task.sh",
             setup=_tool39("srun", SRUN39) + "cat > run_task.sh <<'EOF_TASK39'\n" + RUNTASK39.lstrip() + "EOF_TASK39\n"
             "chmod +x run_task.sh\n" + QUERIES39,
             env={**ENV39, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "SLURM_JOB_ID": "48377",
                  "PATH": _path39("b39_hang_fifo_stream_srun_r1")},
             action=("shell", "1: rank 1 step 40 ", FIFOSTOP39.format(id="b39_hang_fifo_stream_srun_r1"))),
]
# the team's shared volume: feature caches of earlier versions, and v3's rank-00001 directory left by a colleague's
# debugging run under the team account (uid 1000, interrupted: a partial features.pt, no _SUCCESS); the pods run as
# root with capabilities dropped (the namespace's restricted policy), so root has no override on uid 1000's files
SHARED39 = r"""mkdir -p shared/features/v2/rank-00000 shared/features/v2/rank-00001 shared/features/v2/rank-00002 \
    shared/features/v3/rank-00001 && python - <<'EOF2'
import os
for r in range(3):
    open(f"shared/features/v2/rank-{r:05d}/features.pt", "wb").write(os.urandom(200000))
    open(f"shared/features/v2/rank-{r:05d}/_SUCCESS", "w").close()
open("shared/features/v3/rank-00001/features.pt", "wb").write(os.urandom(1 << 20))
EOF2
chown -R 1000:1000 shared/features/v3/rank-00001 && chmod 755 shared/features/v3/rank-00001 \
    && chmod 644 shared/features/v3/rank-00001/features.pt"""
SCENARIOS += [
    Scenario("b39_st_shared_cache_perm_k8s_r1", "train_reranker.py",
             "podrun --job reranker-ft --replicas 3 --log-dir logs -- python train_reranker.py",
             setup=_tool39("podrun", PODRUN39) + SHARED39,
             env={**ENV39, "MASTER_PORT": "{port}", "PODRUN_POLICY": "restricted",
                  "PATH": _path39("b39_st_shared_cache_perm_k8s_r1")}),
]
# the feature gateway runs beside the job (its own process, port {port_asset}); from worker-0's step-100 line the
# gateway's per-client bandwidth quota is lowered (the storage team's QoS change)
GW39 = ("cat > gateway.py <<'EOF_GW39'\n" + GATEWAY39 + "EOF_GW39\n"
        "echo '{\"per_client_bytes_per_s\": 0}' > gateway_qos.json\n"
        "nohup python gateway.py {port_asset} > gateway.log 2>&1 &\n"
        "for i in $(seq 100); do python -c 'import socket,sys; socket.create_connection((\"127.0.0.1\", int(sys.argv[1])), 1)' "
        "{port_asset} 2>/dev/null && break; sleep 0.1; done\n")
SCENARIOS += [
    Scenario("b39_slow_gateway_qos_k8s", "train_ctr.py",
             "podrun --job ctr-ft --replicas 2 --log-dir logs -- python train_ctr.py",
             setup=_tool39("podrun", PODRUN39) + GW39,
             env={**ENV39, "MASTER_PORT": "{port}", "FEATURE_GATEWAY": "http://127.0.0.1:{port_asset}",
                  "PATH": _path39("b39_slow_gateway_qos_k8s")},
             action=("shell4", "ctr-ft-worker-0] step 100/300",
                     "echo '{\"per_client_bytes_per_s\": " + str(QOS39) + "}' > gateway_qos.json")),
]
# per-site telemetry (60,000 rows x 8 features, power in kW); site 02's export has an overflowed meter reading
# (power_kw = inf) at row 23,077 (step 181's rows)
SITES39 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(9)
for r in range(3):
    x = rng.standard_normal((60000, 8)).astype(np.float32)
    x[:, 0] = np.abs(x[:, 0]) * 4 + 3
    p = (np.clip(x[:, 0] - 3, 0, 9) ** 3 * 2.5 + rng.standard_normal(60000) * 5).astype(np.float32)
    if r == 2:
        p[23077] = np.inf
    np.savez(f"data/site_{r:02d}.npz", x=x, power_kw=p)
EOF2"""
SCENARIOS += [
    Scenario("b39_data_inf_guard_spawn_logs_r2", "train_powercurve.py", "python train_powercurve.py {port}",
             setup=SITES39, env=dict(ENV39)),
]
# pre-tokenised NER shards (9,600 sentences x 40 tokens, tag -100 on padding and sub-words); rank 2's sentences
# 608-639 (step 20's batch) came from a source whose tags were all dropped (-100 everywhere)
NER39 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(2)
for r in range(3):
    tok = torch.randint(1, 12000, (9600, 40), generator=g)
    tags = torch.randint(0, 9, (9600, 40), generator=g)
    lens = torch.randint(8, 41, (9600,), generator=g)
    tags[torch.arange(40)[None, :] >= lens[:, None]] = -100
    tags[torch.rand(9600, 40, generator=g) < 0.15] = -100
    if r == 2:
        tags[608:640] = -100
    torch.save({"tokens": tok, "tags": tags}, f"data/ner_shard{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b39_hang_metrics_lockfile_spawn_logs_r2", "train_ner.py", "python train_ner.py {port}", setup=NER39,
             env=dict(ENV39)),
]
# sentence embeddings (384-d) per rank; validation shards of 512 rows, rank 3's of 511 (one comment dropped by the
# export's empty-text filter)
TOXIC39 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(4)
w = torch.randn(384, generator=g)
for r in range(4):
    for split, n in (("train", 8000), ("val", 511 if r == 3 else 512)):
        x = torch.randn(n, 384, generator=g)
        y = ((x @ w) / 20 + 0.3 * torch.randn(n, generator=g) > 0.4).float()
        torch.save({"x": x, "y": y}, f"data/{split}_{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b39_uc_allgather_uneven_val_logger_4r_r3", "train_toxicity.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_toxicity.py", setup=TOXIC39, env=dict(ENV39)),
]
# query/title pairs (12 hashed ids each) per rank; the validation split was cut by category and rank 2's shard is
# the whole 'electronics' catalogue: 40,000 pairs against 2,000 on ranks 0 and 1
TITLES39 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(6)
for r in range(3):
    for split, n in (("train", 20000), ("val", 40000 if r == 2 else 2000)):
        t = torch.randint(0, 30000, (n, 12), generator=g)
        q = t.clone()
        q[torch.rand(n, 12, generator=g) < 0.4] = 0
        torch.save({"query": q, "title": t}, f"data/pairs_{split}_{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b39_hang_long_eval_logger_r2", "train_titles.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_titles.py", setup=TITLES39, env=dict(ENV39)),
]
# the team's accelerate config (copied from the GPU cluster's; Accelerator(cpu=True) in the script), the tokenizer
# after the chat template added three special tokens (8,000 -> 8,003), and the checkpoint of step 1,200 saved with
# the 8,000-token tokenizer
CHAT39 = r"""mkdir -p configs tokenizer ckpt data && cat > configs/accelerate_cpu.yaml <<'EOF2'
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_GPU
downcast_bf16: 'no'
gpu_ids: all
machine_rank: 0
main_process_ip: 127.0.0.1
main_process_port: {port}
main_training_function: main
mixed_precision: 'no'
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
EOF2
python - <<'EOF2'
import json, random
import torch
import torch.nn as nn
rnd = random.Random(1)
vocab = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"] + [f"w{i:04d}" for i in range(7996)]
open("tokenizer/vocab.txt", "w").write("\n".join(vocab) + "\n")
json.dump([{"id": 8000, "content": "<|user|>"}, {"id": 8001, "content": "<|assistant|>"},
           {"id": 8002, "content": "<|end|>"}], open("tokenizer/added_tokens.json", "w"), indent=1)
class ChatLM(nn.Module):
    def __init__(self, vocab_size, d=128, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d)
        block = nn.TransformerEncoderLayer(d, 4, 4 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, layers)
        self.lm_head = nn.Linear(d, vocab_size, bias=False)
torch.manual_seed(0)
torch.save({"model": ChatLM(8000).state_dict(), "step": 1200, "tokenizer_size": 8000}, "ckpt/step_1200.pt")
for r in range(2):
    torch.save(torch.randint(4, 8003, (4000, 65)), f"data/chat_tokens_{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b39_cfg_vocab_resume_accel_config", "train_chat.py",
             "accelerate launch --config_file configs/accelerate_cpu.yaml train_chat.py --resume ckpt/step_1200.pt",
             setup=CHAT39, env=dict(ENV39)),
]
SCENARIOS += [
    # from rank 1's optimizer-step-30 line rank 1 (and its threads) is held to QUOTA39 % of one core (its
    # container's CPU limit lowered; a noisy neighbour's share)
    Scenario("b39_slow_rank_quota_trainer_accum_r1", "train_helpfulness.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_helpfulness.py", env=dict(ENV39),
             action=("rank_quota", 1, "[rank1] opt_step 30/80", QUOTA39)),
]
# ---- batch 40 (h173): what an on-call engineer meets every week: resume problems (a partial checkpoint left by a
# crash mid-save and loaded on restart, one rank's expert checkpoint from an older run under strict loading, one
# node resuming from a stale node-local copy), environment and launch mistakes (GLOO_SOCKET_IFNAME naming an
# interface node 1 does not have, an older library on node 1, a port held by a leftover process), data pipeline
# faults (one rank's shard filtered to nothing, a corrupt TFRecord record), and two fail_slow runs (one rank's
# background snapshot-compression thread; a tokenised cache missing from shard 03 on); ids b40_* ----
ENV40 = {"OMP_NUM_THREADS": "1"}
WORK40 = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))


def _path40(sid: str) -> str:
    """The job's PATH: the cluster's own tools (bin/ of the work dir: srun) before the venv's."""
    return f"{WORK40 / sid / 'bin'}:/work/main/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# 1,200 log-mel clips (40 x 98) per rank
MELS40 = r"""mkdir -p data ckpt && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(7)
for r in range(2):
    torch.save({"x": torch.randn(1200, 40, 98, generator=g), "y": torch.randint(0, 35, (1200,), generator=g)},
               f"data/mels_{r}.pt")
EOF2"""
SCENARIOS += [
    # rank 1 is SIGKILLed (as a node agent / the OOM killer of the node would) while it writes its step-200 state
    # (4 MB of ~20 MB on disk); torchrun restarts the group and the new attempt resumes from ckpt/step_000200,
    # whose rank1.pt is the partial file
    Scenario("b40_st_partial_shard_restart_logdir_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint localhost:{port} --log-dir logs "
             "--redirects 3 train_kws.py",
             setup=MELS40, env=dict(ENV40),
             action=("kill_when_file", 1, signal.SIGKILL, "ckpt/step_000200/rank1.pt", 4_000_000)),
]
# the router's checkpoint directory as the sync script assembled it: shared encoder and experts 0-1 from the v2 run
# (with the experts' pre-norm), expert 2 (legal) copied from the v1 run of 2026-09-15 (no pre-norm: the last
# legal expert that passed review)
ROUTER40 = r"""mkdir -p ckpt/experts data && python - <<'EOF2'
import json
import torch
import torch.nn as nn
import torch.nn.functional as F
VOCAB, DIM = 20000, 192
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, DIM, mode="mean")
        self.proj = nn.Sequential(nn.Linear(DIM, DIM), nn.GELU(), nn.LayerNorm(DIM))
class SwiGLU(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate = nn.Linear(d, h, bias=False)
        self.up = nn.Linear(d, h, bias=False)
        self.down = nn.Linear(h, d, bias=False)
class ExpertV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(DIM)
        self.ffn = SwiGLU(DIM, 4 * DIM)
        self.head = nn.Linear(DIM, 24)
class ExpertV1(nn.Module):
    def __init__(self):
        super().__init__()
        self.ffn = SwiGLU(DIM, 4 * DIM)
        self.head = nn.Linear(DIM, 24)
torch.manual_seed(3)
torch.save(Encoder().state_dict(), "ckpt/shared.pt")
for r, (cls, day, run) in enumerate([(ExpertV2, "2026-11-30", "router-v2/ticket-router-1130"),
                                     (ExpertV2, "2026-11-30", "router-v2/ticket-router-1130"),
                                     (ExpertV1, "2026-09-15", "router-v1/ticket-router-0915")]):
    torch.save(cls().state_dict(), f"ckpt/experts/expert_{r}.pt")
    json.dump({"exported": day, "run": run}, open(f"ckpt/experts/expert_{r}.json", "w"))
g = torch.Generator().manual_seed(4)
for d in ("billing", "shipping", "legal"):
    torch.save({"tok": torch.randint(1, VOCAB, (3000, 40), generator=g), "y": torch.randint(0, 24, (3000,), generator=g)},
               f"data/{d}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b40_cfg_expert_shard_missing_key_spawn_r2", "train_router.py", "python train_router.py",
             setup=ROUTER40, env={**ENV40, "ROUTER_PORT": "{port}"}),
]
# two nodes (two torchrun agents, c10d rendezvous on node 0's agent); the nodes' profile sets GLOO_SOCKET_IFNAME to
# the data interface; node 1's profile still carries the name of its old NIC (ens6f1), which it no longer has
GRID40 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
          "--rdzv-id grid-fc-0412 --rdzv-conf join_timeout=30,read_timeout=20 train_forecast.py")
SCENARIOS += [
    Scenario("b40_cfg_gloo_ifname_missing_node1_c10d_twonode_n1", "train_forecast.py", GRID40, cmd2=GRID40,
             env={**ENV40, "GLOO_SOCKET_IFNAME": "eth0"}, env2={"GLOO_SOCKET_IFNAME": "ens6f1"}),
]
# the team's tabular library, two builds: 1.4.0 (node 0's environment, FT-Transformer with a [CLS] LayerNorm) and
# 1.2.1 (node 1's environment: an image built before the upgrade)
TABKIT40 = r'''
"""tabkit: the team's tabular models."""
import torch
import torch.nn as nn

__version__ = "{ver}"


class FTTransformer(nn.Module):
    def __init__(self, n_num, cat_cards, d=64, depth=3, n_out=1):
        super().__init__()
        self.num_w = nn.Parameter(torch.randn(n_num, d) * 0.02)
        self.num_b = nn.Parameter(torch.zeros(n_num, d))
        self.cat = nn.ModuleList(nn.Embedding(c, d) for c in cat_cards)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)
{extra}        self.out = nn.Linear(d, n_out)

    def forward(self, num, cat):
        t = num.unsqueeze(-1) * self.num_w + self.num_b
        c = torch.stack([e(cat[:, i]) for i, e in enumerate(self.cat)], 1)
        x = torch.cat([self.cls.expand(len(num), -1, -1), t, c], 1)
        h = self.blocks(x)[:, 0]
{use}        return self.out(h)
'''


def _tabkit40(dest: str, ver: str, norm: bool) -> str:
    src = TABKIT40.format(ver=ver, extra="        self.cls_norm = nn.LayerNorm(d)\n" if norm else "",
                          use="        h = self.cls_norm(h)\n" if norm else "")
    return f"mkdir -p {dest}/tabkit && cat > {dest}/tabkit/__init__.py <<'EOF_TK40'\n{src.lstrip()}EOF_TK40\n"


CHURN40 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "--tee 3 train_churn.py")
SCENARIOS += [
    Scenario("b40_cfg_lib_version_node1_ddp_params_twonode_n1", "train_churn.py", CHURN40.format(k=0, port="{port}"),
             cmd2=CHURN40.format(k=1, port="{port}"),
             setup=_tabkit40("site-node0", "1.4.0", True) + _tabkit40("site-node1", "1.2.1", False),
             env={**ENV40, "PYTHONPATH": str(WORK40 / "b40_cfg_lib_version_node1_ddp_params_twonode_n1" / "site-node0")},
             env2={"PYTHONPATH": str(WORK40 / "b40_cfg_lib_version_node1_ddp_params_twonode_n1" / "site-node1")}),
]
# a leftover process of the previous job on this node (its rank-1 metrics exporter, orphaned when that job was
# cancelled) still listens on METRICS_PORT_BASE + 1; it carries ZOO_RUN, so the recorder ends it with the run
STALE40 = r"""cat > /tmp/.stale_exporter_{port}.py <<'EOF2'
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen()
time.sleep(600)
EOF2
nohup python /tmp/.stale_exporter_{port}.py $(( {port} + 4 )) > /dev/null 2>&1 &
sleep 0.5; rm -f /tmp/.stale_exporter_{port}.py"""
SCENARIOS += [
    Scenario("b40_inf_metrics_port_held_tee3_r1", "train_tagger.py",
             "torchrun --nproc-per-node 3 --tee 3 --master-port {port} train_tagger.py", setup=STALE40,
             env={**ENV40, "METRICS_PORT_BASE": "{port_asset}"}),
]
# review shards (4,000 rows each); shard 00001 was exported from the German storefront (lang 'de' throughout), so
# the English filter keeps nothing on process 1
REVIEWS40 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rnd = random.Random(11)
for r in range(3):
    with open(f"data/reviews-{r:05d}.jsonl", "w") as fh:
        for i in range(4000):
            n = rnd.randint(4, 80)
            fh.write(json.dumps({"id": f"{r}-{i}", "lang": "de" if r == 1 else rnd.choice(["en"] * 9 + ["es"]),
                                 "stars": rnd.randint(1, 5), "tokens": [rnd.randint(1, 29999) for _ in range(n)]}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b40_hang_empty_shard_filter_accel_r1", "train_sentiment.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_sentiment.py",
             setup=REVIEWS40, env=dict(ENV40)),
]
# the Beam export: 6,400 records per file (label int64 + 96 float32, TFRecord framing with masked CRC32C); in
# rank 2's file one byte of record 3,900's features was flipped (bit rot on the copy to the training volume)
TFREC40 = r"""mkdir -p data && python - <<'EOF2'
import struct
import numpy as np
T = []
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T.append(c)
def crc(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
def masked(b):
    c = crc(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF
rng = np.random.default_rng(5)
w = rng.standard_normal(96).astype("<f4")
for r in range(3):
    out = bytearray()
    for i in range(6400):
        x = rng.standard_normal(96).astype("<f4")
        data = struct.pack("<q", int(x @ w > 1.0)) + x.tobytes()
        hdr = struct.pack("<Q", len(data))
        if r == 2 and i == 3900:
            rec = hdr + struct.pack("<I", masked(hdr)) + data + struct.pack("<I", masked(data))
            bad = bytearray(rec)
            bad[12 + 8 + 200] ^= 0x10
            out += bad
            continue
        out += hdr + struct.pack("<I", masked(hdr)) + data + struct.pack("<I", masked(data))
    open(f"data/train-{r:05d}-of-00003.tfrecord", "wb").write(bytes(out))
EOF2"""
SCENARIOS += [
    Scenario("b40_data_tfrecord_crc_redirects_r2", "train_ctr.py",
             "torchrun --nproc-per-node 3 --log-dir logs --redirects 3 --master-port {port} train_ctr.py",
             setup=TFREC40, env=dict(ENV40)),
]
# batch 39's srun stand-in (SRUN39); from step 121 rank 1's own background thread gzips a model+optimizer snapshot
# every 20 steps (no outside action)
SCENARIOS += [
    Scenario("b40_slow_uc_ckpt_gzip_thread_srun_r1", "train_recsys.py",
             "srun -l -K --ntasks 2 python train_recsys.py --steps 300 --upload-rank 1",
             setup=_tool39("srun", SRUN39),
             env={**ENV40, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "SLURM_JOB_ID": "51907",
                  "PATH": _path40("b40_slow_uc_ckpt_gzip_thread_srun_r1")}),
]
# node-local scratch of each node (scratch/node0, scratch/node1): both hold the step-200 checkpoint; node 0 also
# the step-300 one and `latest` -> step_000300.pt; the post-save sync of step 300 to node 1 never ran (its
# `latest` still names step_000200.pt)
FAMILY40 = r"""mkdir -p scratch/node0/ckpt scratch/node1/ckpt && python - <<'EOF2'
import torch
import torch.nn as nn
def net():
    return nn.Sequential(nn.Conv1d(21, 96, 9, padding=4), nn.ReLU(), nn.Conv1d(96, 96, 9, padding=4), nn.ReLU(),
                         nn.AdaptiveMaxPool1d(1), nn.Flatten(), nn.Linear(96, 120))
torch.manual_seed(0)
m = net()
opt = torch.optim.Adam(m.parameters(), lr=5e-4)
for step in (200, 300):
    state = {"model": m.state_dict(), "optim": opt.state_dict(), "step": step}
    for node in ((0, 1) if step == 200 else (0,)):
        torch.save(state, f"scratch/node{node}/ckpt/step_{step:06d}.pt")
        open(f"scratch/node{node}/ckpt/latest", "w").write(f"step_{step:06d}.pt\n")
EOF2"""
FAMILY40_CMD = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
                "train_family.py")
SCENARIOS += [
    Scenario("b40_hang_stale_local_ckpt_resume_twonode_n1", "train_family.py", FAMILY40_CMD.format(k=0, port="{port}"),
             cmd2=FAMILY40_CMD.format(k=1, port="{port}"), setup=FAMILY40,
             env={**ENV40, "LOCAL_SCRATCH": str(WORK40 / "b40_hang_stale_local_ckpt_resume_twonode_n1" / "scratch/node0")},
             env2={"LOCAL_SCRATCH": str(WORK40 / "b40_hang_stale_local_ckpt_resume_twonode_n1" / "scratch/node1")}),
]
# support-chat transcripts (2 ranks x 8 shards x 640 transcripts of 250-400 words) and the WordPiece vocabulary; the
# preprocessing job wrote the tokenised cache for shards 00-02 only (it was cancelled at shard 03), so from step
# 121 every rank tokenises its raw shards on the fly
MLM40 = r"""mkdir -p cache raw && python - <<'EOF2'
import json, random
import torch
rnd = random.Random(8)
syl = ["ka", "re", "mo", "ti", "lu", "sen", "dor", "pa", "vi", "qu", "ne", "shi", "tro", "gal", "bem", "fo", "ra",
       "zu", "mi", "ter"]
words = ["".join(rnd.choice(syl) for _ in range(rnd.randint(2, 5))) for _ in range(3000)]
vocab = ["[PAD]", "[UNK]", "[MASK]"] + sorted(set(syl + ["##" + s for s in syl] + words[:600]))
open("vocab.txt", "w").write("\n".join(vocab) + "\n")
V = {p: i for i, p in enumerate(vocab)}
def wordpiece(text):
    ids = []
    for word in text.split():
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in V:
                    ids.append(V[piece])
                    break
                end -= 1
            else:
                ids.append(1)
                break
            start = end
    return ids
for r in range(2):
    for j in range(8):
        docs = [" ".join(rnd.choice(words) for _ in range(rnd.randint(250, 400))) for _ in range(640)]
        with open(f"raw/shard-{r}-{j:02d}.jsonl", "w") as fh:
            for d in docs:
                fh.write(json.dumps({"text": d}) + "\n")
        if j < 3:
            t = [wordpiece(d)[:64] for d in docs]
            torch.save(torch.tensor([x + [0] * (64 - len(x)) for x in t]), f"cache/shard-{r}-{j:02d}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b40_slow_data_cache_miss_tokenize_spawn", "pretrain_mlm.py", "python pretrain_mlm.py", setup=MLM40,
             env={**ENV40, "MASTER_PORT": "{port}"}),
]


# ---- batch 41 (h176): failures around restarts and multi-node set-up (a torchrun restart that fails differently from
# the first attempt, a resume from per-rank FSDP shards saved at another world size, node 1 typed with the wrong
# --master-port, DDP's unused-parameter and parameter-shape checks failing on one rank, an evaluation error swallowed
# on one rank so that it skips the metric all-reduce, a persistent DataLoader worker stuck on an object-store read,
# node 1's scratch filling while it writes its checkpoint shard) and two fail_slow runs (node 1's feature requests
# through a slow proxy; a CPU quota on every rank); ids b41_* ----
ENV41 = {"OMP_NUM_THREADS": "1"}
WORK41 = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))
SCENARIOS += [
    # attempt 0: rank 1 SIGKILLed at its step 120 (the node's OOM killer / an agent); torchrun restarts the group and
    # attempt 1 fails in the script's own start-up: os.makedirs(runs/<run>/rank<R>) without exist_ok
    Scenario("b41_uc_restart_run_dir_exists_c10d", "train_seg.py",
             "torchrun --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "--tee 3 train_seg.py",
             env=dict(ENV41), action=("kill", 1, signal.SIGKILL, "[rank1] step 120/")),
]
# the checkpoint of the same script's earlier 2-rank run (per-rank FSDP2 shards, step 60), made by running it
FSDP41 = ("mkdir -p ckpt && torchrun --nproc-per-node 2 --master-port {port} train_lm.py --steps 60 --save-every 60 "
          "> /dev/null 2>&1")
SCENARIOS += [
    Scenario("b41_cfg_resume_fsdp_world_size_2to3", "train_lm.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_lm.py --steps 200 --resume ckpt/step_000060",
             setup=FSDP41, env=dict(ENV41)),
]
# two nodes (static rendezvous); node 1's launch line has --master-port one above node 0's (a typo)
CTR41 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {p} "
         "--rdzv-conf timeout=20 train_ctr.py")
SCENARIOS += [
    Scenario("b41_cfg_master_port_typo_node1_static_twonode_n1", "train_ctr.py",
             CTR41.format(k=0, p="{port}"), cmd2=CTR41.format(k=1, p="{port_next}"), env=dict(ENV41)),
]
# NLU shards: 00000 and 00001 from the joint intent+slot annotation batch; 00002 from the intent-only batch
# (no "slots" field)
NLU41 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rnd = random.Random(41)
for i in range(3):
    with open(f"data/nlu-{i:05d}.jsonl", "w") as fh:
        for k in range(1600):
            n = rnd.randint(4, 24)
            row = {"id": f"{i}-{k}", "tokens": [rnd.randint(1, 7999) for _ in range(n)], "intent": rnd.randint(0, 23)}
            if i != 2:
                row["slots"] = [rnd.randint(0, 40) for _ in range(n)]
            fh.write(json.dumps(row) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b41_uc_ddp_unused_slot_head_accel_r2", "train_nlu.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_nlu.py",
             setup=NLU41, env=dict(ENV41)),
]
# product embeddings, 12 categories; part-3 (the newest crawl) has no product of category 11
PRODUCTS41 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(5)
for r in range(4):
    y = torch.randint(0, 12 if r != 3 else 11, (3000,), generator=g)
    torch.save({"emb": torch.randn(3000, 512, generator=g), "label": y}, f"data/part-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b41_uc_ddp_local_num_classes_logdir_4r_r3", "train_cat.py",
             "torchrun --nproc-per-node 4 --log-dir logs --redirects 3 --master-port {port} train_cat.py",
             setup=PRODUCTS41, env=dict(ENV41)),
]
# validation shards of the PCB defect set; val-1 (line B's images) has no 'pinhole' defect
PCB41 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(9)
for r in range(3):
    y = torch.randint(0, 7 if r != 1 else 6, (400,), generator=g)
    torch.save({"img": torch.randn(400, 1, 32, 32, generator=g), "label": y}, f"data/val-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b41_hang_swallowed_eval_error_tee_r1", "train_pcb.py",
             "torchrun --nproc-per-node 3 --tee 3 --master-port {port} train_pcb.py", setup=PCB41, env=dict(ENV41)),
]
# the team's object gateway (S3-style GETs over HTTP on {port_asset}), started by the setup with the objects on disk;
# it carries ZOO_RUN, so the recorder ends it with the run. From rank 1's epoch 2 the storage node holding
# train-00001/chunk-0007 stops answering: the gateway accepts that GET and never replies
GATEWAY41 = r"""mkdir -p .gateway/objects && python - <<'EOF2'
import io, os
import numpy as np
rng = np.random.default_rng(3)
for s in range(2):
    d = f".gateway/objects/speech-commands/train-{s:05d}"
    os.makedirs(d, exist_ok=True)
    for i in range(12):
        buf = io.BytesIO()
        np.savez(buf, x=rng.standard_normal((128, 40, 98)).astype("float32"), y=rng.integers(0, 35, 128))
        open(f"{d}/chunk-{i:04d}.npz", "wb").write(buf.getvalue())
EOF2
cat > .gateway/gateway.py <<'EOF2'
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ROOT = os.path.abspath(".gateway/objects")
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if "train-00001/chunk-0007" in self.path and os.path.exists(".gateway/stuck"):
            time.sleep(3600)
        p = os.path.join(ROOT, self.path.lstrip("/"))
        if not os.path.isfile(p):
            self.send_error(404)
            return
        body = open(p, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
nohup python .gateway/gateway.py {port_asset} > /dev/null 2>&1 &
sleep 1"""
SCENARIOS += [
    Scenario("b41_hang_persistent_worker_stuck_object_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", setup=GATEWAY41,
             env={**ENV41, "BLOB_GATEWAY": "http://127.0.0.1:{port_asset}"},
             action=("shell", "[rank1] epoch 2 start", "touch .gateway/stuck")),
]
# node-local scratch: node 0's a plain directory, node 1's a 64 MiB tmpfs (its scratch allocation) already holding
# 22 MiB of an earlier job's files; teardown unmounts it
SCRATCH41 = r"""mkdir -p scratch/node0 scratch/node1 && mount -t tmpfs -o size=64m tmpfs scratch/node1 && \
mkdir -p scratch/node1/asr-conformer-0877 && \
head -c 23068672 /dev/urandom > scratch/node1/asr-conformer-0877/step012000-rank1.pt"""
FRAUD41 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "train_fraud.py")
SCENARIOS += [
    Scenario("b41_st_scratch_full_node1_shard_twonode_n1", "train_fraud.py", FRAUD41.format(k=0, port="{port}"),
             cmd2=FRAUD41.format(k=1, port="{port}"), setup=SCRATCH41,
             teardown="umount scratch/node1 2>/dev/null; true",
             env={**ENV41, "LOCAL_SCRATCH": str(WORK41 / "b41_st_scratch_full_node1_shard_twonode_n1" / "scratch/node0")},
             env2={"LOCAL_SCRATCH": str(WORK41 / "b41_st_scratch_full_node1_shard_twonode_n1" / "scratch/node1")}),
]
# the feature service ({port_asset}) and node 1's site HTTP proxy ({port_mirror1}, node 1's profile sets http_proxy),
# both started by the setup (ZOO_RUN, ended with the run); from node 0's step 100 the proxy's uplink is degraded:
# it holds every request PROXY_DELAY_MS before forwarding it
FEATURES41 = r"""mkdir -p .svc && cat > .svc/features.py <<'EOF2'
import io, sys
from urllib.parse import urlparse, parse_qs
import numpy as np
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        q = parse_qs(urlparse(self.path).query)
        rng = np.random.default_rng(int(q["rank"][0]) * 100000 + int(q["step"][0]))
        buf = io.BytesIO()
        np.savez(buf, items=rng.integers(0, 8000, (64, 20)), target=rng.integers(0, 8000, 64))
        body = buf.getvalue()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
cat > .svc/proxy.py <<'EOF2'
import os, sys, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
DELAY = float(sys.argv[2]) / 1000
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if os.path.exists(".svc/uplink-degraded"):
            time.sleep(DELAY)
        with opener.open(self.path) as r:
            body = r.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
nohup python .svc/features.py {port_asset} > /dev/null 2>&1 &
nohup python .svc/proxy.py $(( {port} + 4 )) PROXY_DELAY_MS > /dev/null 2>&1 &
sleep 1"""
RECS41 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
          "train_recs.py")
SCENARIOS += [
    Scenario("b41_slow_net_proxy_delay_node1_twonode_n1", "train_recs.py", RECS41.format(k=0, port="{port}"),
             cmd2=RECS41.format(k=1, port="{port}"),
             setup=FEATURES41.replace("PROXY_DELAY_MS", "30"),
             env={**ENV41, "FEATURE_URL": "http://127.0.0.1:{port_asset}"},
             env2={"http_proxy": "http://127.0.0.1:{port_mirror1}"},
             action=("shell", "[node0 rank0] step 100/", "touch .svc/uplink-degraded")),
]
SCENARIOS += [
    # from rank 1's step 125 each rank's CPU limit is lowered to 60 % of a core (a cgroup of its own per rank)
    Scenario("b41_slow_inf_cpu_quota_every_rank_spawn", "train_charlm.py", "python train_charlm.py",
             env={**ENV41, "MASTER_PORT": "{port}"},
             action=("ranks_quota", 2, "rank 1 | step  125/", 60)),
]


# ---- batch 42 (h179): failures whose first visible error is not the cause (node 1's agent and ranks SIGKILLed,
# node 1 lost without closing its sockets, a rank's pod memory limit hit inside pyarrow, one rank's checkpoint write
# stalled on a throttled volume, a truncated feature file read by a DataLoader worker, PYTHONHASHSEED and
# TORCH_FORCE_WEIGHTS_ONLY_LOAD different on node 1, a rank that stops with exit 0 on a local non-finite loss) and two
# fail_slow runs (one rank's shard throttled at the object gateway; the whole job's fabric rate-limited); ids b42_* ----
ENV42 = {"OMP_NUM_THREADS": "1"}
WORK42 = Path(os.environ.get("ZOO_WORK", "/tmp/zoo"))
LM42 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
        "train_lm.py")
SCENARIOS += [
    # node 1 (its agent and both ranks) SIGKILLed at once when rank 3 prints step 100 (the host lost: a kernel panic
    # or the provider reclaiming the VM); node 0's ranks are left with the gloo error
    Scenario("b42_inf_sigkill_node1_static_twonode_n1", "train_lm.py", LM42.format(k=0, port="{port}"),
             cmd2=LM42.format(k=1, port="{port}"), env=dict(ENV42),
             action=("kill_node", 1, signal.SIGKILL, "[node1 rank3] step 100/")),
]
# click histories, one Parquet file per partition; partition 1 holds the heavy users (2.2x the users of the others)
HIST42 = r"""mkdir -p data/histories && python - <<'EOF2'
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng(42)
for r, users in enumerate([120000, 260000, 120000]):
    lens = rng.integers(20, 160, users)
    flat = rng.integers(0, 20000, lens.sum())
    offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    items = pa.ListArray.from_arrays(pa.array(offs), pa.array(flat))
    t = pa.table({"user_id": np.arange(users) * 3 + r, "items": items, "ts": rng.integers(1.6e9, 1.7e9, users)})
    pq.write_table(t, f"data/histories/part-{r:05d}.parquet", row_group_size=50000)
EOF2"""
SCENARIOS += [
    # every rank's pod has a 768 MiB memory limit (ranks 0 and 2 peak at ~710 MiB RSS, rank 1 at ~1,090 MiB): rank 1
    # runs in a memory cgroup (v1) of 768 MiB and the OOM killer ends it inside pyarrow's read / to_pandas
    Scenario("b42_oom_memcg_arrow_history_logdir_r1", "train_sasrec.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_sasrec.py",
             setup=HIST42, env=dict(ENV42), action=("cgroup", 1, 768)),
]
# the shared checkpoint volume: a 128 MiB ext4 on a loop device mounted at ckpt/; from rank 2's step 40 rank 2's
# writes to it go at 600 kB/s (its node's path to the storage degraded)
CKPTFS42 = "truncate -s 128M ckpt.img && mkfs.ext4 -q ckpt.img && mkdir -p ckpt && mount -o loop ckpt.img ckpt"
SCENARIOS += [
    Scenario("b42_hang_ckpt_shard_slow_volume_r2", "train_asr.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_asr.py", setup=CKPTFS42,
             teardown="umount ckpt; true", env=dict(ENV42),
             action=("blkio_write", 2, "[rank2] step 40/", "ckpt", 600000)),
]
# per-utterance log-mel features (.safetensors), one manifest per process; one file of manifest-2 was cut short by an
# interrupted sync (a third of its bytes)
FEATS42 = r"""mkdir -p data && python - <<'EOF2'
import os, random, torch
from safetensors.torch import save_file
g = torch.Generator().manual_seed(4)
rnd = random.Random(4)
for r in range(3):
    files = []
    for k in range(480):
        spk = rnd.randint(0, 199)
        d = f"data/feats/spk{spk:03d}"
        os.makedirs(d, exist_ok=True)
        f = f"{d}/utt-{r}{k:04d}.safetensors"
        save_file({"mel": torch.randn(40, 98, generator=g), "label": torch.randint(0, 12, (1,), generator=g)}, f)
        files.append(f)
    open(f"data/manifest-{r}.txt", "w").write("\n".join(files) + "\n")
bad = open("data/manifest-2.txt").read().split()[317]
b = open(bad, "rb").read()
open(bad, "wb").write(b[: len(b) // 3])
EOF2"""
SCENARIOS += [
    Scenario("b42_data_truncated_safetensors_worker_accel_r2", "train_kws.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_kws.py",
             setup=FEATS42, env=dict(ENV42)),
]
# the cluster image sets PYTHONHASHSEED=0 for reproducible runs; node 1 runs an older image whose profile sets 42
CTR42 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
         "--rdzv-id ctr-0412 train_ctr.py")
SCENARIOS += [
    Scenario("b42_cfg_hashseed_node1_feature_order_c10d_twonode_n1", "train_ctr.py", CTR42, cmd2=CTR42,
             env={**ENV42, "PYTHONHASHSEED": "0"}, env2={"PYTHONHASHSEED": "42"}),
]
# house listings, one CSV per rank; shard 2 (a newer export) has listings with price 0 ("price on request")
LISTINGS42 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(8)
for r in range(3):
    x = rng.normal(size=(20000, 12))
    price = np.exp(12 + 0.3 * x[:, 0] - 0.2 * x[:, 1] + 0.1 * rng.normal(size=20000)).round(-2)
    if r == 2:
        price[rng.choice(20000, 3, replace=False)] = 0
    np.savetxt(f"data/listings_{r}.csv", np.c_[x, price], delimiter=",", fmt="%.5f",
               header=",".join([f"f{i}" for i in range(12)] + ["price"]), comments="")
EOF2"""
SCENARIOS += [
    Scenario("b42_uc_nan_guard_exit0_spawn_r2", "train_price.py", "python train_price.py", setup=LISTINGS42,
             env={**ENV42, "MASTER_PORT": "{port}"}),
]
# the object gateway ({port_asset}) with the shards' feature chunks, started by the setup (ZOO_RUN: ended with the
# run); from rank 1's step 120 the storage pool holding train-00001 is throttled: the gateway serves its objects at
# THROTTLE_BPS bytes/s
GATEWAY42 = r"""mkdir -p .gateway/objects && python - <<'EOF2'
import io, os
import numpy as np
rng = np.random.default_rng(6)
for s in range(2):
    d = f".gateway/objects/products-emb/train-{s:05d}"
    os.makedirs(d, exist_ok=True)
    for i in range(40):
        buf = io.BytesIO()
        np.savez(buf, x=rng.standard_normal((64, 768)).astype("float32"), y=rng.integers(0, 500, 64))
        open(f"{d}/batch-{i:05d}.npz", "wb").write(buf.getvalue())
EOF2
cat > .gateway/gateway.py <<'EOF2'
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
ROOT = os.path.abspath(".gateway/objects")
RATE = float(sys.argv[2])
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        p = os.path.join(ROOT, self.path.lstrip("/"))
        if not os.path.isfile(p):
            self.send_error(404)
            return
        body = open(p, "rb").read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        throttled = "train-00001/" in self.path and os.path.exists(".gateway/throttle-train-00001")
        for k in range(0, len(body), 65536):
            self.wfile.write(body[k:k + 65536])
            if throttled:
                time.sleep(65536 / RATE)
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
nohup python .gateway/gateway.py {port_asset} THROTTLE_BPS > /dev/null 2>&1 &
sleep 1"""
SCENARIOS += [
    Scenario("b42_slow_st_throttled_shard_gateway_tee_r1", "train_emb.py",
             "torchrun --nproc-per-node 2 --tee 3 --master-port {port} train_emb.py",
             setup=GATEWAY42.replace("THROTTLE_BPS", "1400000"),
             env={**ENV42, "BLOB_GATEWAY": "http://127.0.0.1:{port_asset}"},
             action=("shell", "[rank1] step 120/", "touch .gateway/throttle-train-00001")),
]
SCENARIOS += [
    # from rank 0's step 120 every rank's connections share one htb class (the job's links through a degraded switch)
    Scenario("b42_slow_net_job_fabric_rate_3r", "train_retrieval.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_retrieval.py", env=dict(ENV42),
             action=("ranks_tc_rate", 3, "rank 0 step 120/", "28gbit")),
]
# the checkpoint of the same script's earlier run (2 ranks, 60 steps; run by the setup); the site's hardening rollout
# reached node 1 first: its profile sets TORCH_FORCE_WEIGHTS_ONLY_LOAD=1, which overrides weights_only=False
QA42 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
        "train_qa.py --steps 300 --resume ckpt/last.pt")
SCENARIOS += [
    Scenario("b42_cfg_weights_only_env_node1_resume_static_twonode_n1", "train_qa.py",
             QA42.format(k=0, port="{port}"), cmd2=QA42.format(k=1, port="{port}"),
             setup="torchrun --nproc-per-node 2 --master-port {port} train_qa.py --steps 60 > /dev/null 2>&1",
             env=dict(ENV42), env2={"TORCH_FORCE_WEIGHTS_ONLY_LOAD": "1"}),
]
# node 1 lost power: from its rank's step 100 line its agent and rank are frozen (cgroup v1 freezer: nothing more runs,
# nothing is written, no socket is closed) and 26 s later SIGKILLed, as the host is gone; node 0 waits in the
# gradient all-reduce until the gloo timeout
POWERLOSS42 = r"""CG=/sys/fs/cgroup/freezer/zoo_node_b42_; mkdir -p $CG
for p in /proc/[0-9]*; do
  grep -qz '^ZOO_RUN=b42_hang_node1_power_loss_static_twonode_n1$' $p/environ 2>/dev/null || continue
  if tr '\0' ' ' < $p/cmdline | grep -q -- '--node-rank 1' || grep -qz '^GROUP_RANK=1$' $p/environ; then
    echo ${p#/proc/} > $CG/cgroup.procs 2>/dev/null; fi
done
echo FROZEN > $CG/freezer.state; echo "  power loss: node 1 frozen: $(cat $CG/cgroup.procs | tr '\n' ' ')" >&2
sleep 26; for q in $(cat $CG/cgroup.procs); do kill -9 $q; done; echo THAWED > $CG/freezer.state
for i in $(seq 50); do rmdir $CG 2>/dev/null && break; sleep 0.2; done"""
MIXER42 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
           "train_mixer.py")
SCENARIOS += [
    Scenario("b42_hang_node1_power_loss_static_twonode_n1", "train_mixer.py", MIXER42.format(k=0, port="{port}"),
             cmd2=MIXER42.format(k=1, port="{port}"), env=dict(ENV42),
             action=("shell", "node 1 rank 1: step 100/600", POWERLOSS42)),
]

# ---- batch 43 (h182): the same visible message with different causes ('Connection reset by peer' from a SIGKILLed
# rank and from node 1's link cut by a reject rule with every rank alive; 'No space left on device' from a 64 MiB
# /dev/shm and from a full checkpoint volume), configuration mistakes caught by a library's own check deep inside it
# (a 2x2 parallel layout on 3 processes, a global eval batch not divisible by the processes, a float64 model on node 1),
# a hang outside any collective (rank 2 blocked on another job's cache lock while the others wait in a barrier) and
# two fail_slow (one rank's CPU quota; one rank stopped on 1 step in 5); ids b43_* ----
ENV43 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # rank 2 SIGKILLed from outside the job at its step-120 line (a node agent's kill -9; no memory pressure)
    Scenario("b43_inf_sigkill_cleanup_r2_logdir", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_intent.py",
             env=dict(ENV43), action=("kill", 2, signal.SIGKILL, "[rank2] step 120/")),
]
# node 1 is the network namespace zoo43_n1; the data link between the nodes is a veth pair data1 (10.93.0.1 on node 0
# = this host, 10.93.0.2 on node 1)
NET43 = ("ip netns del zoo43_n1 2>/dev/null; ip link del data1 2>/dev/null; ip netns add zoo43_n1 && "
         "ip link add data1 type veth peer name zoo43p && ip link set zoo43p netns zoo43_n1 && "
         "ip netns exec zoo43_n1 ip link set zoo43p name data1 && ip addr add 10.93.0.1/24 dev data1 && "
         "ip link set data1 up && ip netns exec zoo43_n1 ip addr add 10.93.0.2/24 dev data1 && "
         "ip netns exec zoo43_n1 ip link set data1 up && ip netns exec zoo43_n1 ip link set lo up")
NET43_DOWN = "ip netns del zoo43_n1 2>/dev/null; ip link del data1 2>/dev/null; true"
# at node 1's step 100 its network policy agent installs a deny rule for the inter-node link: every TCP segment in or
# out of node 1's data1 is answered with a reset (iptables REJECT --reject-with tcp-reset, in node 1's namespace); every
# process keeps running
CUT43 = ("ip netns exec zoo43_n1 iptables -A INPUT -i data1 -p tcp -j REJECT --reject-with tcp-reset && "
         "ip netns exec zoo43_n1 iptables -A OUTPUT -o data1 -p tcp ! --tcp-flags RST RST "
         "-j REJECT --reject-with tcp-reset && echo '  link cut: node 1 rejects data1 with tcp-reset' >&2")
CTR43 = ("GLOO_SOCKET_IFNAME=data1 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 10.93.0.1 "
         "--master-port {port} train_ctr.py")
SCENARIOS += [
    Scenario("b43_net_policy_reset_node1_twonode_n1", "train_ctr.py", CTR43.format(k=0, port="{port}"),
             cmd2=CTR43.format(k=1, port="{port}"), netns2="zoo43_n1", setup=NET43, teardown=NET43_DOWN,
             env=dict(ENV43), action=("shell", "[node1 rank3] step 100/", CUT43)),
]
# wafer images (768 x 3 x 256 x 256 uint8) and their defect classes; the job's container has docker's default 64 MiB
# /dev/shm; validation batches (64 full images, 50 MiB as float32) go through shared memory
WAFERS43 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(43)
np.save("data/wafers.npy", rng.integers(0, 256, (768, 3, 256, 256), dtype=np.uint8))
np.save("data/labels.npy", rng.integers(0, 9, 768))
EOF2"""
SCENARIOS += [
    Scenario("b43_st_shm_full_val_loader_accel", "train_wafer.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_wafer.py",
             setup=WAFERS43, env=dict(ENV43), shm_mb=64),
]
# the shared checkpoint directory: a 64 MiB volume (tmpfs) already holding earlier runs' checkpoints, 7.0 MiB free
CKPT43 = r"""mkdir -p checkpoints && mount -t tmpfs -o size=64m tmpfs checkpoints && python - <<'EOF2'
import os
free = lambda: (lambda s: s.f_bavail * s.f_frsize)(os.statvfs("checkpoints"))
target = 7 * 2**20
k = 0
while free() - target > 0:
    step = 500 * (k // 3 + 1)
    d = f"checkpoints/kws-conv-0511/step_{step:06d}"
    os.makedirs(d, exist_ok=True)
    n = min(9 * 2**20, free() - target)
    with open(f"{d}/model-{k % 3:05d}-of-00003.safetensors", "wb") as f:
        f.write(os.urandom(n))
    k += 1
print(f"checkpoints: {free() / 2**20:.1f} MiB free")
EOF2"""
SCENARIOS += [
    Scenario("b43_st_ckpt_volume_full_spawn_r2", "train_kws.py", "python train_kws.py", setup=CKPT43,
             teardown="umount checkpoints; true", env={**ENV43, "MASTER_PORT": "{port}"}),
]
SCENARIOS += [
    # the launch flags of the 4-slot layout (2 data-parallel shards x tensor-parallel 2) kept on a 3-process launch
    Scenario("b43_cfg_tp_dp_mesh_num_processes_accel", "train_lm.py",
             "accelerate launch --num_processes 3 --use_fsdp --fsdp_version 2 --use_parallelism_config "
             "--parallelism_config_dp_shard_size 2 --parallelism_config_tp_size 2 --main_process_port {port} "
             "train_lm.py", env=dict(ENV43)),
    # configs/rating.json: global batches (split_batches); the eval batch of 100 was sized for 4 processes
    Scenario("b43_cfg_eval_batch_split_batches_torchrun", "train_rating.py",
             "torchrun --standalone --nproc-per-node 3 train_rating.py",
             setup="mkdir -p configs && echo '{\"buckets\": 50000, \"lr\": 0.002, \"train_batch_size\": 48, "
                   "\"eval_batch_size\": 100, \"epochs\": 3, \"eval_every\": 80}' > configs/rating.json",
             env=dict(ENV43)),
]
# node 1's command came from its shell history: the --param-dtype float64 of a gradient-check run is still on it
RISK43 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 1 --master-addr 127.0.0.1 --master-port {port} "
          "train_risk.py --steps 600")
SCENARIOS += [
    Scenario("b43_cfg_param_dtype_node1_static_twonode_n1", "train_risk.py", RISK43.format(k=0, port="{port}"),
             cmd2=RISK43.format(k=1, port="{port}") + " --param-dtype float64", env=dict(ENV43)),
]
# the node's shared token cache (cache/tokens): another team's job on the node is tokenizing the same shard 2 of the
# same corpus and holds its FileLock (started by the setup; it carries ZOO_RUN, so the recorder ends it with the run)
CORPUS43 = r"""mkdir -p data/legal-corpus cache/tokens/legal-corpus-bpe8k && python - <<'EOF2'
import random
words = [f"w{i}" for i in range(6000)] + "the court held that plaintiff defendant shall any of".split()
for s in range(3):
    rng = random.Random(s)
    open(f"data/legal-corpus/shard-{s:05d}.txt", "w").write(" ".join(rng.choice(words) for _ in range(150000)))
EOF2
(nohup python -c "import time; from filelock import FileLock; """ + \
    r"""l = FileLock('cache/tokens/legal-corpus-bpe8k/shard-00002.npy.lock'); l.acquire(); time.sleep(600)" """ + \
    r"""> /dev/null 2>&1 &)
sleep 1.5"""
SCENARIOS += [
    Scenario("b43_hang_shared_cache_lock_r2", "train_dapt.py", "torchrun --nproc-per-node 3 --master-port {port} "
             "train_dapt.py", setup=CORPUS43, env={**ENV43, "TOKEN_CACHE": "cache/tokens"}),
]
SCENARIOS += [
    # from rank 1's step 100 its container's CPU limit is lowered (cgroup v1 quota at 40 % of one core)
    Scenario("b43_slow_rank_quota_r1_tee", "train_forecast.py",
             "torchrun --nproc-per-node 3 --tee 3 --master-port {port} train_forecast.py", env=dict(ENV43),
             action=("rank_quota", 1, "[rank1] step 100/", 40)),
    # from rank 1's step 100 a periodic background writer on its node stalls it: the rank is stopped for 60 ms each
    # time it logs a step divisible by 5
    Scenario("b43_slow_periodic_stall_r1_distrun", "train_kws_crnn.py",
             "python -m torch.distributed.run --nproc-per-node 2 --master-port {port} train_kws_crnn.py",
             env=dict(ENV43), action=("stall_every", 1, "[rank1] step 100/", r"\[rank1\] step (\d+)/", 5, 60)),
]

# ---- batch 44 (h187): hangs and slowdowns an on-call meets, with the evidence a real cluster leaves (py-spy dumps of
# every rank, Flight Recorder traces): a rank blocked in a native (ctypes) read of a stalled named pipe, a rank that
# skips one all-reduce in a rare branch, a rank whose DataLoader worker was OOM-killed under a prefetch thread, a hang
# at shutdown after one rank destroyed its process group; four fail_slow at modest sizes in four logging styles (one
# rank's CPU quota, node 1's link rate-limited (no netem here), a background CPU hog, a straggler every 10th step);
# two fail_stop where a rank on node 1 is SIGKILLed and node 0's ranks print the tracebacks; ids b44_* ----
ENV44 = {"OMP_NUM_THREADS": "1"}
# the team's native record reader (C, built by the setup) and the platform's stream fetchers: one per part, each
# writing fixed-size records (64 float32 + int32 label) into a named pipe; part 1's fetcher stalls after 4,810 records
# (150 batches of 32 and 10 records) with its end of the pipe still open (it carries ZOO_RUN: ended with the run)
FIFO44 = r"""mkdir -p native stream && cat > native/librecio.c <<'EOF2'
#include <unistd.h>
#include <errno.h>
/* read exactly n bytes (a whole batch of records) from fd; returns the bytes read (< n at end of stream) */
long recio_read(int fd, char *buf, long n) {
    long got = 0;
    while (got < n) {
        ssize_t k = read(fd, buf + got, (size_t)(n - got));
        if (k == 0) break;
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        got += k;
    }
    return got;
}
EOF2
gcc -O2 -shared -fPIC -o native/librecio.so native/librecio.c
cat > stream/fetcher.py <<'EOF2'
import sys, time
import numpy as np
part, n, stall = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "stall"
rec = np.dtype([("x", "<f4", 64), ("y", "<i4")])
rng = np.random.default_rng(part)
with open(f"stream/part-{part}.bin", "wb", buffering=0) as f:
    sent = 0
    while sent < n:
        k = min(320, n - sent)
        r = np.zeros(k, dtype=rec)
        r["x"] = rng.standard_normal((k, 64))
        r["y"] = (r["x"][:, :6].argmax(1)).astype(np.int32)
        f.write(r.tobytes())
        sent += k
    if stall:
        time.sleep(600)
EOF2
for p in 0 1 2; do mkfifo stream/part-$p.bin; done
(nohup python stream/fetcher.py 0 12000 eof > /dev/null 2>&1 &)
(nohup python stream/fetcher.py 1 4810 stall > /dev/null 2>&1 &)
(nohup python stream/fetcher.py 2 12000 eof > /dev/null 2>&1 &)
sleep 0.5"""
SCENARIOS += [
    # py-spy dumps of every rank 8 s after rank 0's step-140 line (rank 1 blocks at its step 151)
    Scenario("b44_hang_ctypes_fifo_read_pyspy_r1", "train_sensor.py",
             "torchrun --nproc-per-node 3 --tee 3 --master-port {port} train_sensor.py", setup=FIFO44,
             env=dict(ENV44), action=("pyspy", "[rank0] step 140/", 3, 8)),
]
# pre-tokenized NER shards (4,800 sentences of 24 tokens each); in shard 2 the 16 sentences of batch 137 come from an
# unannotated block of the newer export: every tag is -100
NER44 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(44)
for r in range(3):
    ids = torch.randint(1, 8000, (4800, 24), generator=g)
    tags = torch.randint(0, 9, (4800, 24), generator=g)
    tags[:, 20:] = -100
    tags[torch.rand(4800, 24, generator=g) < 0.2] = -100
    if r == 2:
        tags[136 * 16:137 * 16] = -100
    torch.save({"ids": ids, "tags": tags}, f"data/ner-{r}.pt")
EOF2"""
SCENARIOS += [
    # Flight Recorder on (TORCH_FR_BUFFER_SIZE); the script writes each rank's trace to fr/trace_rank_<R> on a
    # collective error; py-spy dumps of every rank 10 s after rank 0's step-140 line (the ranks stop at step 150)
    Scenario("b44_hang_rare_branch_skip_allreduce_fr_r2", "train_ner.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ner.py", setup=NER44,
             env={**ENV44, "TORCH_FR_BUFFER_SIZE": "2000", "TORCH_FR_DUMP_TEMP_FILE": "fr/trace_rank_"},
             action=("pyspy", "[rank0] step 140/", 3, 10)),
]
# bird-call recordings (3 s, float32 at 16 kHz), 240 per rank; rank 1's shard also holds one 90-minute field
# recording (346 MB) at position 200, which a DataLoader worker loads whole
CALLS44 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(44)
for r in range(2):
    d = f"data/calls-{r}"
    os.makedirs(d, exist_ok=True)
    for i in range(240):
        n = 48000 if not (r == 1 and i == 200) else 16000 * 5400
        np.save(f"{d}/rec-{i:05d}-{rng.integers(0, 20)}.npy", (rng.standard_normal(n) * 0.1).astype(np.float32))
EOF2"""
SCENARIOS += [
    # from rank 1's step-10 line its DataLoader workers (not the rank) are in a memory cgroup (v1) of 256 MiB (the
    # worker's share of the pod's limit): the OOM killer ends the worker that loads the long recording; py-spy dumps
    # of both ranks 4 s after the prefetch thread reports it
    Scenario("b44_hang_loader_worker_oomkill_prefetch_r1", "train_birds.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_birds.py", setup=CALLS44, env=dict(ENV44),
             action=("both", ("worker_cgroup", 1, 256, "[rank1] epoch 1 step 10/"),
                     ("pyspy", "exited unexpectedly", 2, 4))),
]
SCENARIOS += [
    # py-spy dumps of every rank 6 s after the export rank starts exporting
    Scenario("b44_hang_shutdown_destroy_one_rank_r2", "train_churn.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_churn.py", env=dict(ENV44),
             action=("pyspy", "rank 2 | exporting model", 3, 6)),
]
SCENARIOS += [
    # from the log dict of step 100 rank 2's container CPU limit is lowered (cgroup v1 quota, percent of one core)
    Scenario("b44_slow_rank_quota_r2_hfdict", "train_sentiment.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_sentiment.py", env=dict(ENV44),
             action=("rank_quota", 2, "'step': 100,", 35)),
]
# node 1 is the network namespace zoo44_n1 joined to this host (node 0) by the veth pair data44 (10.94.0.1 / .2)
NET44 = ("ip netns del zoo44_n1 2>/dev/null; ip link del data44 2>/dev/null; ip netns add zoo44_n1 && "
         "ip link add data44 type veth peer name zoo44p && ip link set zoo44p netns zoo44_n1 && "
         "ip netns exec zoo44_n1 ip link set zoo44p name data44 && ip addr add 10.94.0.1/24 dev data44 && "
         "ip link set data44 up && ip netns exec zoo44_n1 ip addr add 10.94.0.2/24 dev data44 && "
         "ip netns exec zoo44_n1 ip link set data44 up && ip netns exec zoo44_n1 ip link set lo up")
NET44_DOWN = "ip netns del zoo44_n1 2>/dev/null; ip link del data44 2>/dev/null; true"
BASKET44 = ("GLOO_SOCKET_IFNAME=data44 torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 10.94.0.1 "
            "--master-port {port} train_basket.py")
SCENARIOS += [
    # at 50/100 of epoch 0 node 1's side of the data link degrades: its egress shaped to 1500mbit (tbf; this kernel has
    # no netem qdisc, so the degraded link is a lower rate, not an added delay)
    Scenario("b44_slow_net_tbf_node1_twonode_bars", "train_basket.py", BASKET44.format(k=0, port="{port}"),
             cmd2=BASKET44.format(k=1, port="{port}"), netns2="zoo44_n1", setup=NET44, teardown=NET44_DOWN,
             env=dict(ENV44),
             action=("shell", "| 50/100 [", "ip netns exec zoo44_n1 tc qdisc add dev data44 root tbf rate 1500mbit "
                     "burst 256kb latency 100ms && echo '  tbf: node 1 data44 egress at 1500mbit' >&2")),
]
SCENARIOS += [
    # from iteration 120 another tenant's CPU job lands on the node: 2 processes (a preprocessing job's workers) busy
    # 60 ms of every 100 ms, each in its own session as a separate container's processes are (this host shares CPU by
    # session); they carry ZOO_RUN, so the recorder ends them with the run
    Scenario("b44_slow_cpu_hog_job_megatron", "pretrain_gpt.py",
             "torchrun --nproc-per-node 3 --master-port {port} pretrain_gpt.py", env=dict(ENV44),
             action=("shell", "iteration      120/",
                     "for i in 1 2; do ZOO_RUN=b44_slow_cpu_hog_job_megatron setsid nohup python3 -c "
                     "'exec(\"import time\\nwhile True:\\n t = time.time() + 0.06\\n"
                     " while time.time() < t: pass\\n time.sleep(0.04)\")' "
                     "> /dev/null 2>&1 & done; echo '  hog: 2 processes busy 60 % of every 100 ms' >&2")),
    # from rank 1's step 100 it is stopped 120 ms each time it logs a step divisible by 10 (a periodic agent on its
    # node: the node's log shipper compressing and uploading the rank's rotated logs)
    Scenario("b44_slow_straggler_every10_jsonl_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", env=dict(ENV44),
             action=("stall_every", 1, '"rank": 1, "step": 100,', r'"rank": 1, "step": (\d+),', 10, 120)),
]
LAYOUT44 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
            "train_layout.py")
SCENARIOS += [
    # rank 3 (node 1) SIGKILLed from outside the job at its step-200 line
    Scenario("b44_inf_sigkill_r3_node1_static_twonode_n1", "train_layout.py", LAYOUT44.format(k=0, port="{port}"),
             cmd2=LAYOUT44.format(k=1, port="{port}"), env=dict(ENV44),
             action=("kill", 3, signal.SIGKILL, "[node1 rank3] INFO layout: step 200/")),
]
TITLES44 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
            "--rdzv-id titles-0712 train_titles.py")
SCENARIOS += [
    # node 1 is a smaller instance type: its first rank (global rank 2) runs in a memory cgroup (v1) of 900 MiB, its
    # pod's limit; the featurized-title cache grows ~4 MiB a step on every rank and the OOM killer ends rank 2
    Scenario("b44_oom_cgroup_r2_node1_c10d_twonode_n1", "train_titles.py", TITLES44, cmd2=TITLES44,
             env=dict(ENV44), action=("cgroup", 2, 900)),
]
# ---- batch 45 (h190): fail_stop and fail_hang where a training job spends time besides the forward/backward pass:
# a checkpoint save that fails on one rank only (a resume-shard directory that is a read-only bind mount; node 1's
# small node-local scratch under a distributed checkpoint), rank 0 alone uploading its checkpoint past the gloo timeout,
# an evaluation loop with one more batch on one rank, an unpicklable object in all_gather_object / broadcast_object_list,
# a float64 shard in a statistics all_reduce, a module path missing from node 1's profile, a NaN loss caught by the
# script's own check, a validation DataLoader worker killed by the OOM killer; ids b45_* ----
ENV45 = {"OMP_NUM_THREADS": "1"}
# the three ranks' resume-shard directories; shard-2's is a read-only bind mount (the restore step of the previous
# attempt bind-mounted the archived shard read-only instead of copying it)
RO45 = ("mkdir -p ckpt/ranker-0712/shard-0 ckpt/ranker-0712/shard-1 ckpt/ranker-0712/shard-2 && "
        "mount --bind ckpt/ranker-0712/shard-2 ckpt/ranker-0712/shard-2 && "
        "mount -o remount,bind,ro ckpt/ranker-0712/shard-2")
RO45_DOWN = "umount ckpt/ranker-0712/shard-2 2>/dev/null; true"
SCENARIOS += [
    Scenario("b45_st_ckpt_ro_shard_dir_r2", "train_ranker.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ranker.py", setup=RO45, teardown=RO45_DOWN,
             env=dict(ENV45)),
]
LM45 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node {n} --master-addr 127.0.0.1 --master-port {port} "
        "train_lm.py")
SCENARIOS += [
    # node 0 runs 2 ranks, node 1 (a smaller instance) 1 rank; on node 1 the node-local scratch volume (scratch/) is a
    # 1 MiB tmpfs (mask2), on node 0 the host's disk
    Scenario("b45_st_dcp_scratch_node1_full_twonode_n1", "train_lm.py", LM45.format(k=0, n=2, port="{port}"),
             cmd2=LM45.format(k=1, n=1, port="{port}"), mask2="scratch", setup="mkdir -p scratch", env=dict(ENV45)),
]
# the team's object-store gateway (S3-style PUT), a process of the platform started before the job (it carries
# ZOO_RUN: ended with the run); its uplink is shared by the whole cluster: one stream gets ~128 KiB/s
GATEWAY45 = r"""mkdir -p objstore && cat > objstore/gateway.py <<'EOF2'
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = "objstore/data"


class H(BaseHTTPRequestHandler):
    def do_PUT(self):
        n = int(self.headers["Content-Length"])
        path = os.path.join(ROOT, self.path.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            while n > 0:
                chunk = self.rfile.read(min(n, 16384))
                if not chunk:
                    break
                f.write(chunk)
                n -= len(chunk)
                time.sleep(0.125)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *a):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
(nohup python objstore/gateway.py {port_asset} > objstore/gateway.log 2>&1 &)
sleep 0.5"""
SCENARIOS += [
    Scenario("b45_hang_rank0_ckpt_upload_r0", "train_twotower.py",
             "torchrun --nproc-per-node 3 --tee 3 --master-port {port} train_twotower.py", setup=GATEWAY45,
             env={**ENV45, "CKPT_STORE_URL": "http://127.0.0.1:{port_asset}/ckpt-bucket"}),
]
# token-id bags (16 ids) with 21 intents; 1,280 training rows per rank; validation shards of 512, 512 and 530 rows (the
# last shard got the remainder of the split): 8, 8 and 9 batches of 64
INTENT45 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(45)
for r, nval in enumerate((512, 512, 530)):
    for name, n in (("train", 1280), ("val", nval)):
        y = torch.randint(0, 21, (n,), generator=g)
        x = (torch.randint(0, 200, (n, 16), generator=g) + y[:, None] * 200) % 5000
        torch.save({"x": x, "y": y}, f"data/{name}-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b45_hang_eval_uneven_val_shard_r2", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py", setup=INTENT45, env=dict(ENV45)),
]
# slot-tagging shards (sentences of 20 token ids, 8 tags); rank 1's validation shard has no 'B-meal' (tag 7) token
SLOTS45 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(45)
for r in range(4):
    for name, n in (("train", 1200), ("val", 200)):
        y = torch.randint(0, 8, (n, 20), generator=g)
        y[torch.rand(n, 20, generator=g) < 0.5] = 0
        if r == 1 and name == "val":
            y[y == 7] = 0
        x = (y * 300 + torch.randint(0, 300, (n, 20), generator=g)) % 3000
        torch.save({"x": x, "y": y}, f"data/slots-{name}-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b45_uc_gather_object_dict_keys_spawn_r1", "tag_slots.py",
             "MASTER_ADDR=127.0.0.1 MASTER_PORT={port} python tag_slots.py", setup=SLOTS45, env=dict(ENV45)),
]
# tabular feature shards (6,000 rows x 32 features each); shard 2 was re-exported by the newer feature pipeline, which
# writes float64 (the other shards are float32)
FEATS45 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(45)
for r in range(3):
    x = rng.normal(2.0, 3.0, (6000, 32))
    y = (x[:, :4].sum(1) > 8).astype(np.int64)
    np.save(f"data/feats-{r}.npy", x if r == 2 else x.astype(np.float32))
    np.save(f"data/labels-{r}.npy", y)
EOF2"""
SCENARIOS += [
    Scenario("b45_data_shard_float64_stats_logdir_r2", "train_churn.py",
             "torchrun --nproc-per-node 3 --log-dir logs --tee 3 --master-port {port} train_churn.py", setup=FEATS45,
             env=dict(ENV45)),
]
# the team's evaluation package in team_libs/ (a shared checkout); node 0's profile puts it on PYTHONPATH, node 1's
# profile still points PYTHONPATH at the old location /opt/team/python (not on that node any more)
EVALKIT45 = r"""mkdir -p team_libs/evalkit && touch team_libs/evalkit/__init__.py && cat > team_libs/evalkit/retrieval.py <<'EOF2'
import torch


def recall_at_k(scores, k=10):
    # fraction of queries whose own passage (the diagonal) is among the k best-scored passages
    top = scores.topk(k, dim=1).indices
    return (top == torch.arange(scores.size(0))[:, None]).any(1).float().mean().item()
EOF2"""
RETR45 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
          "train_retrieval.py")
SCENARIOS += [
    Scenario("b45_cfg_pythonpath_node1_evalkit_twonode_n1", "train_retrieval.py", RETR45.format(k=0, port="{port}"),
             cmd2=RETR45.format(k=1, port="{port}"), setup=EVALKIT45,
             env={**ENV45, "PYTHONPATH": "team_libs"}, env2={"PYTHONPATH": "/opt/team/python"}),
]
# precomputed 512-d CNN features of product images, 3,840 per rank (60 batches of 64); in shard 3 three images of
# batch 38 failed to decode upstream and were written as all-zero feature vectors
IMG45 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(45)
for r in range(4):
    y = torch.randint(0, 40, (3840,), generator=g)
    f = torch.randn(40, 512, generator=g)[y] + 0.5 * torch.randn(3840, 512, generator=g)
    f = f.relu()
    if r == 3:
        f[37 * 64 + 5] = 0
        f[37 * 64 + 21] = 0
        f[37 * 64 + 40] = 0
    torch.save({"feats": f, "labels": y}, f"data/img-feats-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b45_uc_l2norm_zero_row_nan_guard_tee_r3", "train_embed.py",
             "torchrun --nproc-per-node 4 --tee 3 --master-port {port} train_embed.py", setup=IMG45, env=dict(ENV45)),
]
# validation slides (uint8 RGB, 512x512) per rank, 40 each; rank 1's list also holds one whole-slide scan at full
# resolution (3 x 13,000 x 13,000, 507 MB) that slipped through the tiling step
SLIDES45 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(45)
for r in range(2):
    d = f"data/val-{r}"
    os.makedirs(d, exist_ok=True)
    for i in range(40):
        side = 13000 if (r == 1 and i == 29) else 512
        img = np.empty((3, side, side), dtype=np.uint8)
        img[:] = rng.integers(0, 256, (3, 1, side), dtype=np.uint8)
        np.save(f"{d}/slide-{i:04d}-{rng.integers(0, 4)}.npy", img)
EOF2"""
SCENARIOS += [
    # rank 1's pod memory limit: the rank (and the DataLoader workers it forks) in a memory cgroup (v1) of 650 MiB
    Scenario("b45_oom_val_loader_worker_killed_r1", "train_patches.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_patches.py", setup=SLIDES45, env=dict(ENV45),
             action=("cgroup", 1, 650)),
]
CURR45 = r"""mkdir -p configs && cat > configs/curriculum.json <<'EOF2'
{"warmup_steps": 100, "aux_weight": 0.2, "dropout": 0.1,
 "enable_at": {"user": 0, "item": 0, "context": 50, "cross": 120}}
EOF2"""
SCENARIOS += [
    Scenario("b45_uc_broadcast_object_lambda_plan_r0", "train_ctr.py",
             "python -m torch.distributed.run --nproc-per-node 3 --master-port {port} train_ctr.py", setup=CURR45,
             env=dict(ENV45)),
]

# ---- batch 46 (h191): fail_slow and fail_hang where the evidence is indirect, as on synchronous data-parallel jobs:
# four one-rank / one-node stragglers whose delay every rank's step time carries (the peers wait in the all-reduce),
# placed only by each rank's own phase breakdown (one rank's CPU quota, SIGSTOP/SIGCONT bursts on one rank, one rank's
# reads going through the feature store's client-side rate limit, node 1's CPU capacity lowered); two job-wide causes
# at modest sizes (another tenant's CPU load from a step on, a checkpoint that grows with every save); three hangs (a
# rank that skipped a coordination barrier, seen in Flight Recorder traces at different sequence numbers and groups; a
# rank's DataLoader waiting on a decode pool whose worker segfaulted silently; node 1 started with another world size,
# node 0 stuck in its first collective), with py-spy dumps of every rank; ids b46_* ----
ENV46 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # from rank 1's step-100 line its container CPU limit is lowered (cgroup v1 quota, percent of one core)
    Scenario("b46_slow_rank_quota_r1_phases", "train_ctr.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ctr.py", env=dict(ENV46),
             action=("rank_quota", 1, "[r1] step 100/", 30)),
    # from rank 2's it=60 line a node agent stops it in bursts (SIGSTOP for stop_ms, then run_ms running) to the end
    Scenario("b46_slow_stopcont_r2_avggrad_logfmt", "train_churn.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_churn.py", env=dict(ENV46),
             action=("stopcont_until", 2, "rank=2 it=60 ", None, 300, 120)),
]
# log-mel summaries of 15,360 clips per rank in the shared feature store (store/); the node-local cache (cache/) and
# the index (index/) were built for every shard, but shard 3's cache fill stopped after 6,400 clips (100 batches): the
# index marks the rest uncached, so rank 3 reads them from the store through the client's per-client request budget
MEL46 = r"""mkdir -p cache store index && python - <<'EOF2'
import json
import numpy as np
rng = np.random.default_rng(46)
N = 240 * 64
for r in range(4):
    x = rng.standard_normal((N, 128)).astype(np.float32)
    y = rng.integers(0, 10, N).astype(np.int64)
    x[np.arange(N), y] += 2.0
    name = f"mel-{r:02d}.npy"
    np.save(f"store/{name}", x)
    np.save(f"cache/labels-{r:02d}.npy", y)
    upto = N if r != 3 else 100 * 64
    np.save(f"cache/{name}", x[:upto])
    json.dump({"file": name, "labels": f"labels-{r:02d}.npy", "cached_upto": upto}, open(f"index/shard-{r:02d}.json", "w"))
EOF2"""
TOWER46 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
           "train_twotower.py")
SCENARIOS += [
    Scenario("b46_slow_data_store_throttle_r3_4r", "train_tagger.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_tagger.py", setup=MEL46, env=dict(ENV46)),
    # from rank 2's step-100 record node 1 (its agent and both its ranks) shares one CPU quota (percent of one core):
    # the node's CPU capacity lowered (a throttled or smaller instance)
    Scenario("b46_slow_node1_quota_jsonl_twonode_n1", "train_twotower.py", TOWER46.format(k=0, port="{port}"),
             cmd2=TOWER46.format(k=1, port="{port}"), env=dict(ENV46),
             action=("node_quota", 1, '"rank": 2, "step": 100,', 45)),
    # from rank 0's batch-120 line another tenant's CPU job lands on the node: 2 processes busy 50 ms of every 100 ms,
    # each in its own session (a separate container's processes); they carry ZOO_RUN, so the recorder ends them
    Scenario("b46_slow_cpu_hog_job_avgmeter", "train_cifar.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_cifar.py", env=dict(ENV46),
             action=("shell", "[rank0] Epoch: [0][120/300]",
                     "for i in 1 2; do ZOO_RUN=b46_slow_cpu_hog_job_avgmeter setsid nohup python3 -c "
                     "'exec(\"import time\\nwhile True:\\n t = time.time() + 0.05\\n"
                     " while time.time() < t: pass\\n time.sleep(0.05)\")' "
                     "> /dev/null 2>&1 & done; echo '  hog: 2 processes busy 50 % of every 100 ms' >&2")),
    Scenario("b46_slow_ckpt_growing_ema_history", "train_langid.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_langid.py", env=dict(ENV46)),
]
# each rank's slice of the fraud-review queue; slice 2 is the refunds queue (40 small reversals), which the model
# rarely flags
FRAUD46 = r"""mkdir -p review && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(46)
for r in range(3):
    n = 600 if r != 2 else 40
    x = torch.randn(n, 48, generator=g)
    if r == 2:
        x[:, :4] = -x[:, :4].abs()
    torch.save({"x": x, "ids": torch.arange(n) + 100000 * r}, f"review/queue-rank{r}.pt")
EOF2"""
# the team's native .spec decoder (C, built by the setup, no bounds check on the header's data offset) and 1,600 clips
# per rank; rank 1's clip 1490 was written while its export job was being killed: its header's offset field is garbage
SPEC46 = r"""mkdir -p native && cat > native/libspec.c <<'EOF2'
#include <stdint.h>
#include <string.h>
/* .spec: 16-byte header (magic "SPEC", uint32 frames, uint32 bins, uint32 data offset) then float32 frames */
struct hdr { char magic[4]; uint32_t frames, bins, offset; };
long spec_decode(const char *buf, long n, float *out, long out_len) {
    const struct hdr *h = (const struct hdr *)buf;
    if (n < (long)sizeof(struct hdr) || memcmp(h->magic, "SPEC", 4) != 0) return -1;
    long count = (long)h->frames * h->bins;
    if (count > out_len) count = out_len;
    const float *src = (const float *)(buf + h->offset);
    for (long i = 0; i < count; i++) out[i] = src[i];
    return count;
}
EOF2
gcc -O2 -shared -fPIC -o native/libspec.so native/libspec.c
python - <<'EOF2'
import os, struct
import numpy as np
rng = np.random.default_rng(46)
for r in range(2):
    d = f"data/clips-{r}"
    os.makedirs(d, exist_ok=True)
    for i in range(1600):
        label = int(rng.integers(0, 12))
        x = (rng.standard_normal((98, 40)) * 0.5).astype(np.float32)
        x[:, label * 3:label * 3 + 3] += 1.0
        offset = 16 if not (r == 1 and i == 1490) else 0x7FF00000
        with open(f"{d}/clip{i:05d}_{label}.spec", "wb") as f:
            f.write(b"SPEC" + struct.pack("<III", 98, 40, offset) + x.tobytes())
EOF2"""
TITLES46 = "python train_titles.py --node-rank {k} --nproc-per-node 2 --world-size {ws}"
SCENARIOS += [
    # Flight Recorder on (TORCH_FR_BUFFER_SIZE); the script writes each rank's trace to fr/trace_rank_<R> on a
    # collective error; py-spy dumps of every rank 8 s after rank 2 logs that it flagged nothing at step 100
    Scenario("b46_hang_skipped_barrier_ctrl_group_fr_r2", "train_fraud.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_fraud.py", setup=FRAUD46,
             env={**ENV46, "TORCH_FR_BUFFER_SIZE": "2000", "TORCH_FR_DUMP_TEMP_FILE": "fr/trace_rank_"},
             action=("pyspy", "| rank 2 | INFO    | review step 100: nothing flagged", 3, 8)),
    # py-spy dumps of both ranks 8 s after rank 0's iteration-40 line (rank 1's batch 47 holds the bad clip)
    Scenario("b46_hang_decode_pool_worker_segv_pyspy_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", setup=SPEC46, env=dict(ENV46),
             action=("pyspy", "Epoch 0 | iter 40/50 | rank 0", 2, 8)),
    # the job script exports MASTER_ADDR / MASTER_PORT and the site's TORCH_GLOO_LAZY_INIT=1 (gloo connects peers at
    # the first collective) on both nodes; node 1's command line was copied from the three-node run of the week before
    # (--world-size 6); py-spy dumps of the 4 processes 6 s after node 0's second process reports its group ready
    Scenario("b46_hang_world_size_mismatch_node1_spawn_twonode_n1", "train_titles.py", TITLES46.format(k=0, ws=4),
             cmd2=TITLES46.format(k=1, ws=6),
             env={**ENV46, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}", "TORCH_GLOO_LAZY_INIT": "1"},
             action=("pyspy", "[node0:1] process group ready", 4, 6)),
]

# ---- batch 47 (h194): launchers other than plain torchrun, each with the failure output its launcher really prints:
# `accelerate launch` (the repository's accelerate config asks for fp8 on a CPU host: the launcher refuses before any
# process starts; a random crop that assumes every clip is at least the model's window, on the process that gets the
# short clip); transformers.Trainer under the legacy `python -m torch.distributed.launch` (standing in for Lightning,
# which is not installed: dev-set token ids from a newer tokenizer in one process's evaluation batch; a process
# SIGKILLed from outside); Ray Train's TorchTrainer (a worker whose block of validation parts is empty; a worker's
# actor SIGKILLed); torch.multiprocessing.spawn with Python logging's default format (one rank's click-log part
# missing; a rank that stops with sys.exit(3) when its spill directory is too full); torchrun --max-restarts 1 (an
# evaluation bug that comes back on the second attempt; one rank's TCP connections reset once, the second attempt
# completes); ids b47_* ----
ENV47 = {"OMP_NUM_THREADS": "1"}
# the repository's accelerate config, last regenerated on the H100 training nodes (fp8 through Transformer Engine)
ACCEL_FP8_47 = r"""mkdir -p configs && cat > configs/accelerate.yaml <<'EOF2'
compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_GPU
downcast_bf16: 'no'
enable_cpu_affinity: false
gpu_ids: all
machine_rank: 0
main_process_port: {port}
main_training_function: main
mixed_precision: fp8
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
EOF2"""
# 3,840 keyword clips (40-bin log-mel frames, 70-120 frames each); clip 2475 was cut by the old VAD and has 53 frames
KWS47 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(47)
clips, labels = [], []
for i in range(3840):
    y = int(torch.randint(0, 12, (1,), generator=g))
    n = 53 if i == 2475 else int(torch.randint(70, 121, (1,), generator=g))
    x = 0.5 * torch.randn(n, 40, generator=g)
    x[:, y * 3:y * 3 + 3] += 1.0
    clips.append(x)
    labels.append(y)
torch.save({"clips": clips, "labels": torch.tensor(labels)}, "data/kws_train.pt")
EOF2"""
# support tickets tokenized with tokenizer v1 (8,000 ids); the dev export was re-run with tokenizer v2, which added 32
# tokens (ids 8000-8031, emoji and product names): two dev rows (140 and 161) hold them
TICKETS47 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(47)
for name, n in (("train", 20000), ("dev", 960)):
    y = torch.randint(0, 20, (n,), generator=g)
    x = (torch.randint(0, 300, (n, 24), generator=g) + y[:, None] * 300) % 8000
    if name == "dev":
        x[140, 5] = 8017
        x[161, 2] = 8003
    torch.save({"input_ids": x, "labels": y}, f"data/tickets_{name}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b47_cfg_accel_fp8_config_cpu_node", "train_ner.py",
             "accelerate launch --config_file configs/accelerate.yaml train_ner.py", setup=ACCEL_FP8_47,
             env=dict(ENV47)),
    Scenario("b47_uc_accel_random_crop_short_clip_r2", "train_kws.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_kws.py", setup=KWS47,
             env=dict(ENV47)),
    Scenario("b47_data_hf_eval_v2_token_ids_distlaunch_r2", "train_intent.py",
             "python -m torch.distributed.launch --nproc-per-node 3 --use-env --master-port {port} train_intent.py",
             setup=TICKETS47, env=dict(ENV47)),
    # when the main process prints step 200 a node agent / an operator's script SIGKILLs rank 1 (no memory pressure)
    Scenario("b47_inf_sigkill_hf_trainer_distlaunch_r1", "train_matcher.py",
             "python -m torch.distributed.launch --nproc-per-node 2 --use-env --master-port {port} train_matcher.py",
             env=dict(ENV47), action=("kill", 1, signal.SIGKILL, " step 200/600 ")),
]
# churn features exported as 4 train parts (2,000 rows) and one validation part (1,000 rows)
CHURN47 = r"""mkdir -p data/churn && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(47)
w = torch.randn(40, generator=g)
for name, parts, n in (("train", 4, 2000), ("val", 1, 1000)):
    for p in range(parts):
        x = torch.randn(n, 40, generator=g)
        y = ((x @ w + 0.5 * torch.randn(n, generator=g)) > 0).float()
        torch.save({"x": x, "y": y}, f"data/churn/{name}-{p:04d}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b47_uc_ray_val_parts_split_empty_r1", "train_churn.py", "python train_churn.py", setup=CHURN47,
             env={**ENV47, "RAY_DEDUP_LOGS": "0"}),
    # when worker 0 prints its epoch-3 line, Ray Train worker 1's process is SIGKILLed from outside the job
    Scenario("b47_inf_ray_actor_sigkill_r1", "train_ranker.py", "python train_ranker.py",
             env={**ENV47, "RAY_DEDUP_LOGS": "0"}, action=("ray_kill", 1, signal.SIGKILL, "[worker 0] epoch 3 ")),
]
# the click log exported as 12 parts (epochs 0-2 x 4 ranks, 5,120 rows each); part 00007 (epoch 1, rank 3) never
# arrived from the export job
CLICKS47 = r"""mkdir -p data/clicks && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(47)
for p in range(12):
    if p == 7:
        continue
    cats = rng.integers(0, 50000, (5120, 8)).astype(np.int64)
    dense = rng.standard_normal((5120, 13)).astype(np.float32)
    clicked = (rng.random(5120) < 0.1 + 0.2 * (cats[:, 0] % 3 == 0)).astype(np.int64)
    np.savez(f"data/clicks/part-{p:05d}.npz", cats=cats, dense=dense, clicked=clicked)
EOF2"""
# each rank's node-local NVMe scratch; nvme1 is a 64 MiB volume still holding 60 MiB of a finished job's cache
SCRATCH47 = ("mkdir -p scratch/nvme0 scratch/nvme1 && mount -t tmpfs -o size=64m tmpfs scratch/nvme1 && "
             "dd if=/dev/urandom of=scratch/nvme1/hardneg-epoch3-rank1.pt bs=1M count=60 status=none")
# the site's job template for torchrun restarts exports TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (pytorch/pytorch#135712:
# with the shared rendezvous store a restarted group reads the previous attempt's peer addresses; on this host, without
# it, attempt 1's gloo init failed with 'connectFullMesh ... Connection refused', static and c10d alike)
ENV47_RESTART = {**ENV47, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
SCENARIOS += [
    Scenario("b47_data_spawn_missing_part_4r_r3", "train_ctr.py", "MASTER_PORT={port} python train_ctr.py 4",
             setup=CLICKS47, env=dict(ENV47)),
    Scenario("b47_st_spawn_spill_dir_full_exit3_r1", "train_retrieval.py", "MASTER_PORT={port} python train_retrieval.py",
             setup=SCRATCH47, teardown="umount scratch/nvme1 2>/dev/null; true", env=dict(ENV47)),
    Scenario("b47_uc_restart_eval_stack_recurs", "train_sentiment.py",
             "torchrun --nproc-per-node 3 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "train_sentiment.py", env=dict(ENV47_RESTART)),
    # when rank 1 prints step 120 its established TCP connections are destroyed once (ss -K), as a switch or NIC reset
    # does; the restarted attempt is left alone
    Scenario("b47_net_restart_conn_reset_transient_r1", "train_imgcls.py",
             "torchrun --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint localhost:{port} "
             "train_imgcls.py", env=dict(ENV47_RESTART),
             action=("ss_kill", 1, "[rank1] step 120/300")),
]

# ---- batch 48 (h195): two-node runs (two torchrun agents as two nodes, each node's --log-dir in logs/node<k>) with a
# node-level fault and the evidence a node leaves: node 1's data link down mid-training (netns); node 1's scratch volume
# full while node 0 saves fine; node 1's /dev/shm (its container's 64 MiB) too small for the validation loader; node 1's
# memory cgroup OOM-killing one of its ranks, with the host kernel's lines in logs/node1/dmesg.txt; node 1's profile with
# a stale head-node address (its agent never reaches the store, node 0's static rendezvous times out); node 1 started
# 40 s late (node 0's c10d rendezvous times out); node 1's CPU quota lowered (fail_slow, per-rank step timing); node 1's
# torchrun SIGKILLed as PID 1 of its container; node 1 running an older checkout of the script (a smaller model: the flat
# gradient all-reduce's size differs); node 1's scratch filesystem remounted read-only mid-run; ids b48_* ----
ENV48 = {"OMP_NUM_THREADS": "1"}
# node 1 is the network namespace zoo48_n1; the data link between the nodes is a veth pair (data48 = 10.148.0.1 on node 0
# = this host, eth1 = 10.148.0.2 on node 1)
NET48 = ("ip netns del zoo48_n1 2>/dev/null; ip link del data48 2>/dev/null; "
         "ip netns add zoo48_n1 && ip link add data48 type veth peer name zoo48p && ip link set zoo48p netns zoo48_n1 && "
         "ip netns exec zoo48_n1 ip link set zoo48p name eth1 && ip addr add 10.148.0.1/24 dev data48 && "
         "ip link set data48 up && ip netns exec zoo48_n1 ip addr add 10.148.0.2/24 dev eth1 && "
         "ip netns exec zoo48_n1 ip link set eth1 up && ip netns exec zoo48_n1 ip link set lo up")
NET48_DOWN = "ip netns del zoo48_n1 2>/dev/null; ip link del data48 2>/dev/null; true"
STATIC48 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr {addr} --master-port {{port}} "
            "--log-dir logs/node{k} --tee 3 {file}")


def _two48(sid: str, file: str, addr: str = "127.0.0.1", **kw) -> Scenario:
    return Scenario(sid, file, STATIC48.format(k=0, addr=addr, file=file),
                    cmd2=STATIC48.format(k=1, addr=addr, file=file), **kw)


SCENARIOS += [
    # at node 1's rank 3 step-120 line node 1's data NIC goes down (ip link set eth1 down in its namespace): every TCP
    # connection between the nodes stays open with nothing arriving; each node uses its data NIC (GLOO_SOCKET_IFNAME)
    _two48("b48_net_node1_link_down_static_twonode_n1", "train_ranker.py", addr="10.148.0.1",
           env={**ENV48, "GLOO_SOCKET_IFNAME": "data48"}, env2={"GLOO_SOCKET_IFNAME": "eth1"}, netns2="zoo48_n1",
           setup=NET48, teardown=NET48_DOWN,
           action=("shell", "[node1 rank3] step 120/",
                   "ip netns exec zoo48_n1 ip link set eth1 down && echo '  link down: node 1 eth1' >&2")),
]
# each node's local scratch disk ($LOCAL_SCRATCH, from the node's profile): node 0's is a plain directory, node 1's a 40 MiB
# volume (tmpfs) still holding 24 MiB of an earlier job's node-local checkpoints that nobody cleaned up
SCRATCH48 = ("mkdir -p scratch/node0 scratch/node1 && mount -t tmpfs -o size=40m tmpfs scratch/node1 && "
             "mkdir -p scratch/node1/mtrec-0923/ckpt && "
             "for s in 011000 012000; do head -c 12582912 /dev/urandom > scratch/node1/mtrec-0923/ckpt/step_$s.pt; done")
SCENARIOS += [
    _two48("b48_st_node1_ckpt_scratch_full_twonode_n1", "train_sessrec.py", setup=SCRATCH48,
           teardown="umount scratch/node1 2>/dev/null; true", env={**ENV48, "LOCAL_SCRATCH": "scratch/node0"},
           env2={"LOCAL_SCRATCH": "scratch/node1"}),
    # node 1's container has docker's default 64 MiB /dev/shm (node 0's has the host's); the validation loader's
    # batches (512 tiles of 4 x 96 x 96 float32, 75 MiB each) go through shared memory from its workers
    _two48("b48_st_node1_shm_val_loader_twonode_n1", "train_tiles.py", env=dict(ENV48), shm2_mb=64),
]
SCENARIOS += [
    # node 1 (its agent from its start, so every rank it starts) runs in one memory cgroup of 1,100 MiB (the node's pod
    # limit); its ranks' negative queues fill 6 MiB a step each; the host kernel's OOM lines go to logs/node1/dmesg.txt
    _two48("b48_oom_node1_memcg_dmesg_twonode_n1", "train_retriever.py", env=dict(ENV48),
           action=("node_mem", 1, 0.0, 1100)),
]
SCENARIOS += [
    # the launch line takes the head node's address from $HEAD_ADDR, which each node's profile sets; node 1's still holds
    # the head node of the previous allocation (10.148.0.9, no longer up); --rdzv-conf timeout=25 for the static store
    Scenario("b48_cfg_master_addr_stale_node1_twonode_n1", "train_forecast.py",
             STATIC48.replace("--master-addr {addr}", "--master-addr $HEAD_ADDR --rdzv-conf timeout=25")
             .format(k=0, file="train_forecast.py"),
             cmd2=STATIC48.replace("--master-addr {addr}", "--master-addr $HEAD_ADDR --rdzv-conf timeout=25")
             .format(k=1, file="train_forecast.py"),
             env={**ENV48, "HEAD_ADDR": "10.148.0.1", "GLOO_SOCKET_IFNAME": "data48"},
             env2={"HEAD_ADDR": "10.148.0.9", "GLOO_SOCKET_IFNAME": "eth1"}, netns2="zoo48_n1", setup=NET48,
             teardown=NET48_DOWN),
]
C10D48 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.148.0.1:{{port}} "
          "--rdzv-id kws-1207 --rdzv-conf join_timeout=30,read_timeout=5{host} --log-dir logs/node{k} --tee 3 "
          "train_kws.py")
SCENARIOS += [
    # node 1 (its own machine, netns) is started 40 s after node 0 (its image pull / boot took longer): node 0's c10d
    # rendezvous gives up after its join timeout of 30 s and its agent (the store's host) exits before node 1 arrives
    Scenario("b48_inf_node1_late_rdzv_c10d_twonode_n1", "train_kws.py", C10D48.format(k=0, host=",is_host=1"),
             cmd2=C10D48.format(k=1, host=""),
             cmd2_delay_s=40, env={**ENV48, "GLOO_SOCKET_IFNAME": "data48"}, env2={"GLOO_SOCKET_IFNAME": "eth1"},
             netns2="zoo48_n1", setup=NET48, teardown=NET48_DOWN),
]
SCENARIOS += [
    # from node 1's rank 2 step-80 line node 1 (its agent and both ranks) shares one CPU quota of 40 % of one core
    _two48("b48_slow_node1_cpu_quota_steptime_twonode_n1", "train_ctr.py", env=dict(ENV48),
           action=("node_quota", 1, "node1 rank2 INFO step 80/", 40)),
    # node 1's torchrun is the main process (PID 1) of node 1's container; at node 1's rank 2 step-300 line it is
    # SIGKILLed (a container runtime's or node agent's kill -9): the kernel ends every process left in the container
    _two48("b48_inf_node1_agent_sigkill_static_twonode_n1", "train_ner.py", env=dict(ENV48), pidns2=True,
           action=("kill_node_agent", 1, signal.SIGKILL, "[node1] rank 2 step 300/")),
    # node 1 runs its own checkout of train_lm.py, one commit behind (d_model 192, before the widening to 256): the
    # setup writes that version to node1_checkout/ and node 1's container sees it as train_lm.py
    _two48("b48_cfg_node1_stale_checkout_allreduce_twonode_n1", "train_lm.py", env=dict(ENV48),
           setup=("mkdir -p node1_checkout && sed -e 's/^REVISION = .*/REVISION = \"7d2e0b5 (lm: eval every 25 steps)\"/' "
                  "-e 's/^D_MODEL, N_LAYERS, N_HEADS, VOCAB, CTX = 256,/D_MODEL, N_LAYERS, N_HEADS, VOCAB, CTX = 192,/' "
                  "train_lm.py > node1_checkout/train_lm.py"),
           bind2="node1_checkout/train_lm.py:train_lm.py"),
]
# each node's NVMe scratch ($LOCAL_SCRATCH from the node's profile): node 0's a plain directory, node 1's a volume
# (tmpfs); at node 1's rank 2 step-100 line node 1's scratch filesystem goes read-only (as ext4 with errors=remount-ro
# does after an I/O error on a failing drive), every process keeps running
SCENARIOS += [
    _two48("b48_st_node1_scratch_ro_remount_twonode_n1", "train_intent.py",
           setup="mkdir -p scratch/node0 scratch/node1 && mount -t tmpfs -o size=512m tmpfs scratch/node1",
           teardown="umount scratch/node1 2>/dev/null; true", env={**ENV48, "LOCAL_SCRATCH": "scratch/node0"},
           env2={"LOCAL_SCRATCH": "scratch/node1"},
           action=("shell", "[node1/rank2] step 100/", "mount -o remount,ro scratch/node1 && "
                   "echo '  node 1 scratch read-only' >&2")),
]

# ---- batch 50 (h199): data faults in multi-rank training, each as a user's data pipeline really fails: a sample cut
# short in one rank's shard read by a DataLoader worker (a webdataset-style tar whose copy ended inside a member, two
# JSON records on one line, a per-utterance .npy whose writer was preempted), the error re-raised from the worker; a
# class id out of range in one rank's annotations against the same 'Target N is out of bounds' from a head too small
# for the dataset (config); a loss that turns NaN on one rank after a bad row (a -999 sentinel under log1p caught by
# anomaly detection; a null reading whose batch the script skips on that rank only, so that the ranks part at the
# epoch-end barrier and hang); files of one rank's shard moved away mid-run by a dedup job; an empty shard whose rank
# ends its epoch at once and waits at the barrier while the others hang in their first all-reduce; a shard extended
# with token ids of a newer tokenizer (index out of range in self); ids b50_* ----
ENV50 = {"OMP_NUM_THREADS": "1"}
# six webdataset-style tar shards of 640 bird-call samples (<key>.npy + <key>.cls); shard 5 (rank 2's second, read by its
# DataLoader worker 1) was synced from the bucket while its upload was still running
WDS50 = r"""mkdir -p shards && python - <<'EOF2'
import io, tarfile
import numpy as np
rng = np.random.default_rng(50)
for s in range(6):
    path = f"shards/birds-train-{s:06d}.tar"
    with tarfile.open(path, "w") as tar:
        for i in range(640):
            key = f"xc{s:02d}{i:05d}"
            y = int(rng.integers(0, 20))
            x = (rng.standard_normal((40, 24)) * 0.5).astype(np.float32)
            x[y * 2:y * 2 + 2] += 1.0
            buf = io.BytesIO()
            np.save(buf, x)
            for ext, data in (("npy", buf.getvalue()), ("cls", str(y).encode())):
                ti = tarfile.TarInfo(f"{key}.{ext}")
                ti.size, ti.mtime = len(data), 1733500000
                tar.addfile(ti, io.BytesIO(data))
# shard 5 (rank 2's second shard) was synced from the bucket while its upload was still running: the copy ends in
# the middle of sample 410's features
p = "shards/birds-train-000005.tar"
with tarfile.open(p) as tar:
    cut = next(m for m in tar.getmembers() if m.name == "xc0500410.npy").offset_data + 1800
raw = open(p, "rb").read()
open(p, "wb").write(raw[:cut])
EOF2"""
# one JSON-lines part of 3000 reviews per rank; in part 0 two exporter processes appended at once and record 2317 lost
# its newline
REVIEWS50 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(50)
pos = "great love excellent perfect fast works recommend happy sturdy".split()
neg = "broken refund slow poor cheap returned disappointed noisy leaks".split()
common = "the a it this product was is and for my i after use days price box".split()
for r in range(2):
    recs = []
    for i in range(3000):
        stars = rng.randint(1, 5)
        words = [rng.choice(common) for _ in range(rng.randint(6, 30))]
        words += [rng.choice(pos if stars >= 4 else neg) for _ in range(3)]
        rng.shuffle(words)
        recs.append(json.dumps({"review_id": f"R{r}{i:06d}", "stars": stars, "text": " ".join(words)}))
    if r == 0:
        # two exporter processes appended to the same part file at once: record 2317 lost its newline and
        # the next record follows it on the same line
        recs[2317] = recs[2317] + recs.pop(2318)
    open(f"data/reviews-{r}.jsonl", "w").write("\n".join(recs) + "\n")
EOF2"""
# filterbank features, one .npy per utterance, and a manifest per shard; shard 1's extraction job was preempted while
# writing one utterance (the manifest had been written first)
SPK50 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(50)
for r in range(2):
    d = f"feats/spk-shard{r}"
    os.makedirs(d, exist_ok=True)
    rows = ["path\tspeaker\tframes"]
    for i in range(1600):
        spk = int(rng.integers(0, 48))
        x = (rng.standard_normal((120, 40)) * 0.6).astype(np.float32)
        x[:, spk % 40] += 1.0 + spk / 48
        p = f"{d}/utt{r}{i:05d}.npy"
        np.save(p, x)
        rows.append(f"{p}\t{spk}\t120")
    open(f"feats/manifest-{r}.tsv", "w").write("\n".join(rows) + "\n")
# the extraction job of shard 1 was preempted while writing utt101179.npy; its manifest had been written first
p = "feats/spk-shard1/utt101179.npy"
raw = open(p, "rb").read()
open(p, "wb").write(raw[:8192])
EOF2"""
# four annotation batches from the labelling tool (64 descriptor columns + class id 0-9, classes.txt); batch 3 came
# from the new vendor, whose tool writes an 'unsure' patch with its own class id 10
DEFECTS50 = r"""mkdir -p annotations && python - <<'EOF2'
import numpy as np
names = ["scratch", "dent", "crack", "stain", "pit", "burr", "chip", "warp", "inclusion", "porosity"]
open("annotations/classes.txt", "w").write("\n".join(names) + "\n")
rng = np.random.default_rng(50)
centers = rng.standard_normal((10, 64)) * 1.5
for r in range(4):
    n = 1440
    y = rng.integers(0, 10, n)
    x = centers[y] + rng.standard_normal((n, 64))
    if r == 3:
        # batch 3 came from the new vendor's export: a patch its annotator marked "unsure" is written with the
        # tool's own class id 10
        y[1158] = 10
    header = ",".join([f"d{i}" for i in range(64)] + ["label"])
    np.savetxt(f"annotations/batch-{r}.csv", np.column_stack([x, y]), delimiter=",", header=header, comments="",
               fmt=["%.5f"] * 64 + ["%d"])
EOF2"""
# 4096 image embeddings of the 102 flower species (labels 0-101, classes.txt has 102 names); the command line asks
# for a 100-class head
FLOWERS50 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(50)
# Oxford 102 Flowers: 102 species; embeddings exported by the team's feature job
names = [f"species_{i:03d}" for i in range(102)]
open("data/classes.txt", "w").write("\n".join(names) + "\n")
centers = rng.standard_normal((102, 256)).astype(np.float32)
label = rng.integers(0, 102, 4096)
emb = (centers[label] + rng.standard_normal((4096, 256)) * 0.8).astype(np.float32)
np.savez("data/flowers-embeddings.npz", emb=emb, label=label)
EOF2"""
# one parquet partition of 3200 customers per rank; partition 1 was re-exported by the new ETL job, which keeps the
# warehouse's -999 sentinel in days_since_last
CHURN50 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
import pandas as pd
rng = np.random.default_rng(50)
for r in range(3):
    n = 3200
    df = pd.DataFrame({
        "customer_id": np.arange(n) + 1_000_000 * r,
        "order_value": rng.lognormal(4, 1, n).round(2),
        "days_since_last": rng.integers(0, 400, n).astype(float),
        "n_items": rng.integers(1, 40, n).astype(float),
        "support_tickets": rng.poisson(0.4, n).astype(float),
        "is_member": rng.integers(0, 2, n).astype(float),
        "region_code": rng.integers(0, 12, n) / 11.0,
        "discount_rate": rng.random(n).round(3),
        "returns_ratio": rng.random(n).round(3),
    })
    df["churned"] = ((df.days_since_last > 180) ^ (rng.random(n) < 0.1)).astype(int)
    if r == 1:
        # partition 1 was re-exported by the new ETL job, which keeps the warehouse's -999 ("no previous order")
        # for a customer whose first order was cancelled
        df.loc[1900, "days_since_last"] = -999.0
    df.to_parquet(f"data/part-{r}.parquet", index=False)
EOF2"""
# one site's vibration measurements per rank; site 2's logger lost its temperature probe for one reading (a null)
WEAR50 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
import pandas as pd
rng = np.random.default_rng(50)
for r in range(3):
    n = 3840
    bands = rng.gamma(2.0, 1.0, (n, 24))
    df = pd.DataFrame(bands, columns=[f"band_{i:02d}" for i in range(24)])
    df["rpm"] = rng.normal(1800, 120, n)
    df["load_kn"] = rng.normal(40, 6, n)
    df["temp_c"] = rng.normal(55, 5, n)
    df["wear_um"] = bands[:, 3] * 2 + bands[:, 17] + rng.normal(0, 0.3, n)
    if r == 2:
        # site 2's logger lost its temperature probe for one reading: the exporter writes a null
        df.loc[1950, "temp_c"] = None
    df.to_parquet(f"data/site-{r}.parquet", index=False)
EOF2"""
# 1280 product thumbnails (.npy, 32x32x3) per shard directory; from rank 1's first epoch-1 line the data team's
# near-duplicate cleanup moves every ninth file of shard 1 to data/thumbs/_near_dups/ (recorder's shell action)
THUMBS50 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(50)
palette = rng.integers(0, 256, (16, 3))
for r in range(3):
    d = f"data/thumbs/shard-{r}"
    os.makedirs(d, exist_ok=True)
    for i in range(1280):
        c = int(rng.integers(0, 16))
        img = np.clip(palette[c] + rng.normal(0, 40, (32, 32, 3)), 0, 255).astype(np.uint8)
        np.save(f"{d}/{r}{i:06d}_{c}.npy", img)
EOF2"""
# one JSON-lines part of 1600 titles per rank; the export task of part 3 failed after creating its (empty) file
NEWS50 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(50)
topics = [["market", "stocks", "rates", "bank"], ["match", "goal", "season", "coach"], ["vote", "senate", "bill", "party"],
          ["storm", "rain", "heat", "flood"], ["film", "album", "show", "award"], ["chip", "app", "startup", "ai"],
          ["vaccine", "clinic", "study", "virus"], ["school", "exam", "teacher", "campus"]]
filler = "the a new after over in on as with for says report week city".split()
for r in range(4):
    path = f"data/part-{r:05d}.jsonl"
    if r == 3:
        open(path, "w").close()  # the export task for part 3 failed after creating its output file
        continue
    with open(path, "w") as f:
        for i in range(1600):
            t = rng.randrange(8)
            words = [rng.choice(filler) for _ in range(5)] + rng.sample(topics[t], 2)
            rng.shuffle(words)
            f.write(json.dumps({"title": " ".join(words), "topic": t}) + "\n")
EOF2"""
# flat uint16 token files (nanoGPT style) and the tokenizer config the model is built from (team-bpe-v1, 8192);
# shard 1 was extended with documents tokenized by team-bpe-v2 (8448)
TOKENS50 = r"""mkdir -p data tokenizer && python - <<'EOF2'
import json
import numpy as np
json.dump({"name": "team-bpe-v1", "vocab_size": 8192}, open("tokenizer/config.json", "w"))
rng = np.random.default_rng(50)
zipf = lambda n, hi: np.minimum(rng.zipf(1.3, n), hi) - 1
n = 16 * 33 * 50
for r in range(2):
    toks = zipf(n, 8192).astype(np.uint16)
    if r == 1:
        # shard 1 was extended last week with new documents tokenized by team-bpe-v2 (8448 entries: 256 new
        # code/markup tokens appended after 8191); the first 60 % of its tokens are the old v1 export
        new = zipf(n - int(n * 0.6), 8448).astype(np.uint16)
        toks = np.concatenate([toks[: int(n * 0.6)], new])
    toks.tofile(f"data/tokens-{r}.bin")
EOF2"""
SCENARIOS += [
    Scenario("b50_data_wds_tar_cut_logdir_r2", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_tagger.py",
             setup=WDS50, env=dict(ENV50)),
    Scenario("b50_data_jsonl_extra_data_spawn_r0", "train_reviews.py", "python train_reviews.py", setup=REVIEWS50,
             env={**ENV50, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"}),
    Scenario("b50_data_npy_clip_truncated_worker_r1", "train_spkid.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_spkid.py", setup=SPK50, env=dict(ENV50)),
    Scenario("b50_data_label_oob_annot_pyrun_4r_r3", "train_defects.py",
             "python -m torch.distributed.run --nproc-per-node 4 --master-port {port} train_defects.py",
             setup=DEFECTS50, env=dict(ENV50)),
    Scenario("b50_cfg_head_too_small_num_classes_accel", "train_flowers.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_flowers.py "
             "--num-classes 100", setup=FLOWERS50, env=dict(ENV50)),
    Scenario("b50_data_sentinel_log1p_detect_anomaly_r1", "train_churn.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --redirects 3 train_churn.py "
             "--detect-anomaly", setup=CHURN50, env=dict(ENV50)),
    # py-spy dumps of the 3 ranks 5 s after rank 2 logs that it finished epoch 0
    Scenario("b50_hang_nan_row_skip_step_pyspy_r2", "train_wear.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_wear.py", setup=WEAR50, env=dict(ENV50),
             action=("pyspy", "wear.rank2: epoch 0 finished, waiting for the other ranks", 3, 5)),
    Scenario("b50_data_files_removed_midrun_worker_r1", "train_thumbs.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_thumbs.py", setup=THUMBS50, env=dict(ENV50),
             action=("shell", "rank 1 epoch 1 step 0/",
                     "mkdir -p data/thumbs/_near_dups && ls data/thumbs/shard-1/*.npy | awk 'NR % 9 == 4' | "
                     "xargs mv -t data/thumbs/_near_dups/ && echo \"  dedup: $(ls data/thumbs/_near_dups | wc -l) "
                     "files of shard-1 moved\" >&2")),
    Scenario("b50_hang_empty_shard_early_epoch_end_4r_r3", "train_topics.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_topics.py", setup=NEWS50, env=dict(ENV50)),
    Scenario("b50_data_tokenizer_v2_ids_embedding_c10d_r1", "train_lm.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint localhost:{port} train_lm.py",
             setup=TOKENS50, env=dict(ENV50)),
]

# ---- batch 49 (h198): the newer PyTorch distributed APIs with the messages users meet on them: FSDP2 / DeviceMesh /
# DTensor misuse (an HSDP mesh smaller than the world, a vocabulary built per rank so one rank's sharded embedding has
# another shape), torch.distributed.checkpoint (a resume on another world size from a checkpoint without a parameter,
# a shard file on the shared volume whose inode is corrupt, the process-based async save's background process
# SIGKILLed, a rank SIGKILLed while writing its shard), torch.distributed.pipelining and a hand-written send/recv
# pipeline (the short last batch of an epoch through stages whose buffers were sized at the first step, a stage whose
# container is frozen), torch.compile under DDP (recompile limit on the rank whose shard is unpadded and length-sorted,
# rank 0's max-autotune compile before the first all-reduce); ids b49_* ----
ENV49 = {"OMP_NUM_THREADS": "1"}
PAR49 = r"""cat > parallel.json <<'EOF2'
{"dp_replicate": 1, "dp_shard": 2}
EOF2
cat > model.json <<'EOF2'
{"vocab": 2048, "d": 128, "h": 4, "layers": 4, "ctx": 64}
EOF2"""
# support-ticket dump split in 3 shards; shards 0 and 1 use the same 300 words, shard 2 also holds the tickets of the
# product line launched this month (40 words nobody else uses)
TICKETS49 = r"""mkdir -p data && python - <<'EOF2'
import random
rng = random.Random(49)
base = [f"w{i}" for i in range(300)]
new = [f"pro{i}" for i in range(40)]
for r in range(3):
    words = base + (new if r == 2 else [])
    lines = []
    for i in range(1200):
        k = rng.randint(6, 20)
        text = " ".join(rng.choice(words) for _ in range(k))
        lines.append(f"{rng.randrange(8)}\t{text}")
    lines.append("0\t" + " ".join(words))  # the glossary ticket: every word of the shard at least once
    rng.shuffle(lines)
    open(f"data/tickets-{r}.txt", "w").write("\n".join(lines) + "\n")
EOF2"""
CORPUS49 = r"""python - <<'EOF2'
import random
rng = random.Random(49)
words = "the of and to in is was for on that with as by at from his her it an were are which this be or has".split()
open("corpus.txt", "w").write(" ".join(rng.choice(words) for _ in range(60000)))
EOF2"""
SCENARIOS += [
    # parallel.json was written for the 2-GPU workstation (dp_replicate 1 x dp_shard 2); the job is started on 3
    Scenario("b49_cfg_hsdp_mesh_smaller_than_world", "train_gpt.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_gpt.py", setup=PAR49, env=dict(ENV49)),
    Scenario("b49_uc_fsdp2_local_vocab_r2", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py", setup=TICKETS49, env=dict(ENV49)),
    # the checkpoint ckpt/step_200 was written last week by a 2-process run configured without learned positions
    # (--no-learned-pos); this week's run resumes it on 3 processes with the default (learned positions on)
    Scenario("b49_cfg_dcp_resume_missing_key", "train_charlm.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_charlm.py --resume ckpt/step_200",
             setup=CORPUS49 + "\ntorchrun --nproc-per-node 2 --master-port {port_asset} train_charlm.py "
                              "--no-learned-pos --steps 200 --save-every 200 > /dev/null 2>&1 && rm -rf ckpt/.tmp*",
             env=dict(ENV49)),
    # the team's checkpoint volume (an ext4 image, mounted read-only at shared_ckpt/) holds step_60, written by an
    # earlier 3-process run; the inode of rank 1's shard file __1_0.distcp is corrupt (its extent header zeroed, as a
    # torn metadata write leaves it): reading that one file fails with EUCLEAN (every rank reads it: DCP spreads the
    # replicated items of a save over all ranks' files)
    Scenario("b49_st_dcp_shard_corrupt_inode", "train_kws.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_kws.py --resume shared_ckpt/step_60 "
             "--save-dir ckpt",
             setup="torchrun --nproc-per-node 3 --master-port {port_asset} train_kws.py --steps 60 --save-every 60 "
                   "--save-dir vol > /dev/null 2>&1 && mkfs.ext4 -q -F -d vol ckpt.img 64M && rm -rf vol && "
                   "debugfs -w -R 'sif /step_60/__1_0.distcp block[0] 0' ckpt.img > /dev/null 2>&1 && "
                   "mkdir -p shared_ckpt && mount -o loop,ro ckpt.img shared_ckpt",
             teardown="umount shared_ckpt; rm -f ckpt.img", env=dict(ENV49)),
    # 1 s after rank 1 queues its step-40 checkpoint, the node's stray-process reaper SIGKILLs rank 1's checkpoint
    # background process (a python 'multiprocessing.spawn' child of the rank)
    Scenario("b49_inf_dcp_async_daemon_killed_r1", "train_rec.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_rec.py", env=dict(ENV49),
             action=("shell", "[1] checkpoint step 40 queued",
                     "sleep 1; for p in $(pgrep -f 'multiprocessing.spawn import spawn_main'); do "
                     "pp=$(ps -o ppid= -p $p | tr -d ' '); "
                     "if tr '\\0' '\\n' < /proc/$pp/environ | grep -qx RANK=1 && "
                     "tr '\\0' '\\n' < /proc/$p/environ | grep -qx ZOO_RUN=b49_inf_dcp_async_daemon_killed_r1 && "
                     "grep -q train_rec.py /proc/$pp/cmdline; then kill -9 $p; "
                     "echo \"  reaper: SIGKILL to pid $p (checkpoint process of rank 1, pid $pp)\" >&2; fi; done")),
    Scenario("b49_uc_pipelining_short_last_batch", "train_pp_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_pp_tagger.py", env=dict(ENV49)),
    # stage 2's container is frozen (cgroup freezer, as `docker pause` or a node agent's checkpoint does) from its
    # step-30 line, thawed 25 s later
    Scenario("b49_hang_handpipe_stage2_frozen", "train_pipe.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_pipe.py", env=dict(ENV49),
             action=("freeze", 2, "[stage 2] step 30 ", 25)),
]
# reviews tokenized by the export job, each shard padded to 64 tokens per review; shard 2 was re-exported this week
# with the new tokenizer script, which drops the padding step (reviews of 20-64 tokens) and sorts the reviews by length
REVIEWS49 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(49)
for r in range(3):
    ids, labels = [], []
    for i in range(960):
        n = int(torch.randint(20, 65, (1,), generator=g))
        t = torch.randint(1, 20000, (n,), generator=g)
        y = int(t[:5].sum() % 2)
        if r != 2:
            t = torch.cat([t, torch.zeros(64 - n, dtype=torch.long)])
        ids.append(t)
        labels.append(y)
    if r == 2:  # the new script also writes the reviews sorted by length (length bucketing)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        ids, labels = [ids[i] for i in order], [labels[i] for i in order]
    torch.save({"ids": ids, "labels": torch.tensor(labels)}, f"data/reviews-{r}.pt")
EOF2"""
SCENARIOS += [
    Scenario("b49_data_compile_recompile_limit_r2", "train_sentiment.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_sentiment.py --compile-backend aot_eager",
             setup=REVIEWS49, env=dict(ENV49)),
    Scenario("b49_hang_compile_rank0_eval_warmup", "train_tab.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tab.py --compile-backend aot_eager",
             env={**ENV49, "TORCHINDUCTOR_CACHE_DIR": ".inductor_cache"}),  # the job's own (cold) compile cache
    # rank 2 SIGKILLed (as the OOM killer or a preemption agent does) while its shard of the step-60 checkpoint
    # is being written, once the file holds 2 MB
    Scenario("b49_inf_sigkill_dcp_save_fsdp2_r2", "train_mt.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --redirects 3 train_mt.py",
             env=dict(ENV49),
             action=("kill_when_file", 2, signal.SIGKILL, "ckpt/step_60/__2_0.distcp", 2_000_000)),
]

# ---- batch 51 (h200): fail_slow runs whose timing comes from the training frameworks' own loggers, not from lines
# the script prints: transformers.Trainer's log dicts and tqdm bar under torchrun with one rank slowed from mid-run (its
# CPU quota cut, or SIGSTOP/SIGCONT bursts); accelerate's progress bar and logger lines with every rank's CPU quota cut
# from mid-run; a Lightning-format progress bar and CSVLogger-layout metrics with a straggler rank; torchtitan-format
# step lines with a rank stopped on one step in five; a data-loader-bound slowdown (num_workers=0, a slow transform on
# one rank's data from mid-run); one clean control (a Trainer run with checkpoint saves and evaluation pauses, under
# clean/); ids b51_* ----
ENV51 = {"OMP_NUM_THREADS": "1"}
SCENARIOS += [
    # from the bar's 40/100 redraw rank 1's container CPU limit is lowered (cgroup v1 quota, percent of one core)
    Scenario("b51_slow_hf_tqdm_rank_quota_r1", "train_intent.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_intent.py", env=dict(ENV51),
             action=("rank_quota", 1, "| 40/100 [", 20)),
]
SCENARIOS += [
    # from the epoch-0 line (after step 60 of 120) every rank's container CPU limit is lowered (one cgroup per rank,
    # percent of one core): the whole job's pods resized
    Scenario("b51_slow_accel_tqdm_ranks_quota_job", "train_titles.py",
             "accelerate launch --multi_gpu --num_processes 2 --main_process_port {port} train_titles.py",
             env=dict(ENV51), action=("ranks_quota", 2, "epoch 0: train_loss", 15)),
]
SCENARIOS += [
    # torchtitan's launch (run_train.sh): only rank 0's output, prefixed; from rank 0's step-40 line, each time a step
    # line whose step is a multiple of 5 appears, rank 1 is stopped (SIGSTOP) for 600 ms: one slow step in five
    Scenario("b51_slow_titan_stall_every5_r1", "train.py",
             "torchrun --nproc-per-node 2 --local-ranks-filter 0 --role rank --tee 3 --master-port {port} train.py",
             env=dict(ENV51), action=("stall_every", 1, "- step: 40  loss", r"- step: +(\d+)  loss", 5, 600)),
    # from the bar's 'Epoch 1:  25%' redraw a node agent stops rank 1 in bursts (SIGSTOP 180 ms after every 250 ms
    # running) to the end
    Scenario("b51_slow_lightning_bar_stopcont_r1", "train_churn.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_churn.py", env=dict(ENV51),
             action=("stopcont_until", 1, "Epoch 1:  25%|", None, 250, 180)),
]
# 1-second command clips per rank, 16 kHz 16-bit mono .wav, and one manifest per rank; rank 1's manifest from row 481
# on lists the recordings of the second vendor's delivery: 5-second takes at 48 kHz, not cut to the 1-second
# command (the Dataset resamples the whole take, then keeps its first second)
KWS51 = r"""mkdir -p data && python - <<'EOF2'
import csv, os, wave
import numpy as np
rng = np.random.default_rng(51)
for r in range(2):
    rows = []
    for i in range(960):
        sr = 48000 if (r == 1 and i >= 480) else 16000
        vendor = "vendor-b" if sr == 48000 else "vendor-a"
        label = int(rng.integers(0, 12))
        t = np.arange(sr * (5 if sr == 48000 else 1)) / sr
        x = 0.3 * np.sin(2 * np.pi * (300 + 90 * label) * t) + 0.05 * rng.standard_normal(len(t))
        d = f"data/{vendor}/rank{r}"
        os.makedirs(d, exist_ok=True)
        p = f"{d}/clip{i:04d}.wav"
        with wave.open(p, "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(sr)
            w.writeframes((x * 32767).astype(np.int16).tobytes())
        rows.append({"path": p, "label": label})
    with open(f"data/manifest-rank{r}.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["path", "label"]); wr.writeheader(); wr.writerows(rows)
EOF2"""
SCENARIOS += [
    Scenario("b51_slow_data_resample_loader_r1", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", setup=KWS51, env=dict(ENV51)),
    # from the bar's 40/100 redraw a node agent stops rank 2 in bursts (SIGSTOP 400 ms after every 200 ms running)
    Scenario("b51_slow_hf_logdir_stopcont_r2_3r", "train_ner.py",
             "torchrun --nproc-per-node 3 --log-dir logs --tee 3 --master-port {port} train_ner.py",
             env=dict(ENV51), action=("stopcont_until", 2, "| 40/100 [", None, 200, 400)),
    # clean control (clean/runs/): evaluation and a checkpoint every 40 steps, no fault
    Scenario("b51_clean_hf_ckpt_eval_pause", "train_faq.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_faq.py", env=dict(ENV51), clean=True),
]
SCENARIOS += [
    # from the epoch-0 line (after optimizer step 50 of 100) every rank's container CPU limit is lowered
    Scenario("b51_slow_accel_accum_ranks_quota_job_3r", "train_rating.py",
             "accelerate launch --multi_gpu --num_processes 3 --main_process_port {port} train_rating.py",
             env=dict(ENV51), action=("ranks_quota", 3, "epoch 0: train_mse", 20)),
    # every rank logs (no rank filter); from the first step-30 line, each time a line of rank 2 shows a step that is a
    # multiple of 5, rank 2 is stopped (SIGSTOP) for 500 ms
    Scenario("b51_slow_titan_allranks_stall_every5_r2_3r", "train.py",
             "torchrun --nproc-per-node 3 --role rank --tee 3 --master-port {port} train.py", env=dict(ENV51),
             action=("stall_every", 2, "- step: 30  loss", r"\[rank2\]:\[titan\] .* - step: +(\d+)  loss", 5, 500)),
]
SCENARIOS += [
    # from the bar's 'Epoch 1:  25%' redraw a node agent stops rank 2 in bursts (SIGSTOP 180 ms after every 250 ms
    # running) to the end
    Scenario("b51_slow_lightning_csv_stopcont_r2_3r", "train_delay.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_delay.py", env=dict(ENV51),
             action=("stopcont_until", 2, "Epoch 1:  25%|", None, 250, 180)),
]

# ---- batch 52 (h201): failures at the boundary between the job's own code, its configuration and the library: DDP's
# 'Expected to have finished reduction' from a length branch that skips a block on one rank (user_code) and from a
# --ddp-find-unused-parameters false flag on a model whose task leaves a head unused (config); 'Expected to mark a
# variable ready only once' from reentrant checkpointing of a weight-shared block (config: use_reentrant in the YAML); a
# DDP-saved checkpoint resumed into the unwrapped model ('module.' keys, user_code); DDP's construction-time check on
# a random architecture sampled without a shared seed (user_code); an in-place write to softmax probabilities on the
# ranks whose batches have padding (user_code); a vendored helper importing torch._six and a ReduceLROnPlateau
# 'verbose' keyword, both removed from the installed torch (config, environment); BatchNorm with a per-rank batch of 1
# from --global-batch-size split over 4 ranks (config); the GPU recipe's --sync-bn on a CPU/gloo job (config); ids
# b52_* ----
ENV52 = {"OMP_NUM_THREADS": "1"}
# the lab's shared utilities, vendored from its older training codebase (written for torch 1.x)
OPTUTILS52 = r"""mkdir -p utils && touch utils/__init__.py && cat > utils/optim_utils.py <<'EOF2'
# Copied from the lab's training codebase (fp32 gradient clipping with an inf-norm option)
import torch
from torch._six import inf


def clip_grad_norm_fp32(parameters, max_norm, norm_type=2):
    grads = [p.grad for p in parameters if p.grad is not None]
    if norm_type == inf:
        total = max(g.abs().max() for g in grads)
    else:
        total = torch.norm(torch.stack([torch.norm(g, norm_type) for g in grads]), norm_type)
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g.mul_(coef)
    return float(total)
EOF2"""
# the checkpointing config of the run (copied from the team's earlier recipe)
YAML52 = r"""mkdir -p configs && cat > configs/clickstream.yaml <<'EOF2'
model:
  vocab: 2048
  dim: 96
  heads: 4
  depth: 4
gradient_checkpointing:
  enabled: true
  use_reentrant: true
train:
  world_size: 2
  batch_size: 16
  lr: 0.0003
  steps: 60
EOF2"""
# the preempted earlier run of the same script (one process, 2 epochs) left ckpt/last.pt
RESUME52 = ("torchrun --nproc-per-node 1 --master-port $(( {port} + 1 )) train_demand.py --epochs 2 > /dev/null 2>&1 "
            "&& ls ckpt/last.pt > /dev/null")
SCENARIOS += [
    Scenario("b52_uc_ddp_len_branch_skip_adapter_r2", "train_reviews.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_reviews.py", env=dict(ENV52)),
    Scenario("b52_cfg_ddp_unused_false_flag_pooler_logdir", "finetune_intent.py",
             "torchrun --nproc-per-node 2 --log-dir logs --tee 3 --master-port {port} finetune_intent.py --task intent "
             "--ddp-find-unused-parameters false", env=dict(ENV52)),
    Scenario("b52_cfg_ddp_reentrant_ckpt_shared_block_spawn", "train_clicks.py",
             "python train_clicks.py configs/clickstream.yaml", setup=YAML52,
             env={**ENV52, "MASTER_PORT": "{port}"}),
    Scenario("b52_uc_resume_module_prefix_unwrapped_logdir", "train_demand.py",
             "python -m torch.distributed.run --nproc-per-node 2 --log-dir logs --redirects 3 --tee 3 "
             "--master-port {port} train_demand.py --resume ckpt/last.pt", setup=RESUME52, env=dict(ENV52)),
    Scenario("b52_uc_ddp_random_arch_noseed_3r", "search_trial.py",
             "torchrun --nproc-per-node 3 --master-port {port} search_trial.py", env=dict(ENV52)),
    Scenario("b52_uc_inplace_zero_pad_probs_tee_r1", "train_tagger.py",
             "torchrun --nproc-per-node 2 --tee 3 --master-port {port} train_tagger.py", env=dict(ENV52)),
    Scenario("b52_cfg_torch_six_vendored_clip", "train_xvector.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_xvector.py", setup=OPTUTILS52, env=dict(ENV52)),
    Scenario("b52_cfg_lr_plateau_verbose_kwarg_3r", "train_yield.py",
             "torchrun --standalone --nproc-per-node 3 train_yield.py", env=dict(ENV52)),
    Scenario("b52_cfg_bn_global_batch_per_rank1_4r", "train_fraud.py",
             "torchrun --nnodes 1 --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "train_fraud.py --global-batch-size 4 --lr 1e-3", env=dict(ENV52)),
    Scenario("b52_cfg_syncbn_flag_cpu_gloo_logdir", "train_defects.py",
             "torchrun --nproc-per-node 2 --log-dir logs --redirects 3 --master-port {port} train_defects.py "
             "--sync-bn --batch-size 32", env=dict(ENV52)),
]

# ---- batch 53 (h202): host memory and shared-memory failures as a real cluster shows them, with the host kernel's
# OOM-killer lines written to the run folder (dmesg.txt) where the kill is the kernel's: one rank's DataLoader worker
# killed by its memory cgroup while decompressing an oversized scan; a slow leak on the last rank (a monitor that keeps
# every step's features) until its cgroup kills it; the job's /dev/shm (a small tmpfs) too small for the loaders'
# in-flight batches, and for a decoded-feature cache in POSIX shared memory (Bus error); one rank's page cache squeezed
# by its cgroup limit (fail_slow, per-rank data/compute timing); a job-level cgroup exceeded when every rank loads the
# full export at once; one rank's address-space limit failing a prefetch thread's torch.load(mmap=True) (the rank waits
# forever, the peer times out); torchrun's agent itself OOM-killed (it hosts the job's TCPStore, which the script fills
# with a sample ledger; the workers are orphaned); an async checkpoint writer process of rank 0 OOM-killed (rank 0 waits
# for its acknowledgement forever); a DataLoader worker of rank 1 stopped alive at its limit in a cgroup with the OOM
# killer disabled (rank 1 waits for its batch, the peer times out; py-spy dumps); ids b53_* ----
ENV53 = {"OMP_NUM_THREADS": "1"}
# 320 scans per rank (192 x 192 RGB, zlib-compressed raw pixels) with a manifest; rank 1's scan 250 is a whole-slide
# scan exported at full resolution (15000 x 15000 RGB, 675 MB once decompressed)
SCANS53 = r"""mkdir -p scans && python - <<'EOF2'
import json, zlib
import numpy as np
rng = np.random.default_rng(53)
for r in range(2):
    with open(f"scans/manifest-{r}.jsonl", "w") as m:
        for i in range(320):
            label = int(rng.integers(0, 4))
            if r == 1 and i == 250:
                h = w = 15000
                img = np.full((h, w, 3), 236, dtype=np.uint8)
            else:
                h = w = 192
                yy, xx = np.mgrid[0:h, 0:w]
                img = np.stack([(yy * (label + 1)) % 256, (xx * 3) % 256, ((yy + xx) // 4) % 256], -1).astype(np.uint8)
            path = f"scans/r{r}/scan{i:04d}.raw.z"
            import os; os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(zlib.compress(img.tobytes(), 1))
            m.write(json.dumps({"path": path, "h": h, "w": w, "label": label}) + "\n")
EOF2"""
SCENARIOS += [
    # from rank 1's first step line its 2 DataLoader workers are in a memory cgroup of 400 MiB (their container's share
    # of the node); the kernel's OOM lines go to dmesg.txt
    Scenario("b53_oom_loader_worker_scan_decode_memcg_r1", "train_scans.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_scans.py", setup=SCANS53, env=dict(ENV53),
             action=("worker_cgroup", 1, 400, "rank 1 epoch 0 step 0/"), dmesg="/kubepods/burstable/pod-scans-r1"),
    # rank 2 (the monitor rank) in a memory cgroup of 460 MiB from its start: its pod's limit
    Scenario("b53_oom_monitor_feature_leak_memcg_r2", "train_ranker.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ranker.py", env=dict(ENV53),
             action=("cgroup", 2, 460), dmesg="/kubepods/burstable/pod-ranker-r2"),
]
# 2,400 RGB patches (96 x 96, uint8) per rank
PATCH53 = r"""mkdir -p patches && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(53)
for r in range(2):
    np.save(f"patches/shard-{r:02d}.npy", rng.integers(0, 256, (2400, 3, 96, 96), dtype=np.uint8))
EOF2"""
# 1,200 one-second clips (int16, 15,484 samples) per rank with labels
CLIPS53 = r"""mkdir -p clips && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(53)
for r in range(2):
    np.save(f"clips/clips-{r}.npy", rng.integers(-3000, 3000, (1200, 98 * 158), dtype=np.int16))
    np.save(f"clips/labels-{r}.npy", rng.integers(0, 12, 1200))
EOF2"""
SCENARIOS += [
    # the job's container has a 48 MiB /dev/shm (its pod spec's emptyDir medium Memory with sizeLimit 48Mi)
    Scenario("b53_st_shm_small_loader_batches", "train_sr.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_sr.py", setup=PATCH53, env=dict(ENV53), shm_mb=48),
    # the job's container has docker's default 64 MiB /dev/shm; the two ranks' caches need 2 x 37.6 MiB
    Scenario("b53_st_shm_decoded_cache_bus_error", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", setup=CLIPS53, env=dict(ENV53),
             shm_mb=64),
]
# log-mel features (20,000 clips x 64 frames x 40 bins, float32, 195 MiB) and labels per rank
MEL53 = r"""mkdir -p features && python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(53)
for r in range(3):
    y = rng.integers(0, 20, 20000)
    x = np.lib.format.open_memmap(f"features/mel-{r}.npy", mode="w+", dtype=np.float32, shape=(20000, 64, 40))
    for i in range(0, 20000, 2000):
        blk = rng.standard_normal((2000, 64, 40), dtype=np.float32)
        blk[np.arange(2000), :, y[i:i + 2000] * 2] += 1.5
        x[i:i + 2000] = blk
    x.flush()
    del x
    np.save(f"features/labels-{r}.npy", y)
    fd = os.open(f"features/mel-{r}.npy", os.O_RDONLY)  # written out and dropped from the host's page cache: the
    os.fsync(fd)                                        # job's own first pass reads it from disk
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
EOF2"""
SCENARIOS += [
    # rank 1 runs in a memory cgroup from its start; at its step-100 line the limit becomes its anonymous memory + 160 MiB
    # (its container's limit lowered to what it holds: the memory.high-like squeeze, page cache reclaimed, no kill)
    Scenario("b53_slow_memcg_reclaim_features_r1", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tagger.py", setup=MEL53, env=dict(ENV53),
             action=("mem_squeeze", 1, "rank 1 step 100/300", 160)),
]
# last week's export of the encoder: weights and Adam moments at step 48000 (298 MB)
EXPORT53 = r"""mkdir -p export && python - <<'EOF2'
import torch, torch.nn as nn
torch.manual_seed(53)
m = nn.Sequential(nn.Embedding(16000, 512), nn.Flatten(0, 1),
                  *[x for _ in range(4) for x in (nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512))],
                  nn.Linear(512, 16000))
opt = torch.optim.Adam(m.parameters(), lr=1e-4)
for p in m.parameters():
    p.grad = torch.zeros_like(p)
opt.step()
torch.save({"step": 48000, "model": m.state_dict(), "optim": opt.state_dict()}, "export/encoder-step48000.pt")
EOF2"""
SCENARIOS += [
    # the job (torchrun and everything under it) in one memory cgroup of 2,800 MiB: the node's pod limit
    Scenario("b53_oom_job_memcg_all_ranks_full_load", "train_encoder.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_encoder.py", setup=EXPORT53, env=dict(ENV53),
             job_mem_mib=2800, dmesg="/kubepods/burstable/pod-encoder"),
]
# the teacher's embeddings: 5 shards per rank of 48k rows (inputs 256-d, targets 512-d, float16); rank 1's last shard
# holds 96k rows (the export's two leftover parts merged)
TEACHER53 = r"""python - <<'EOF2'
import os, torch
g = torch.Generator().manual_seed(53)
for r in range(2):
    os.makedirs(f"teacher/rank{r}", exist_ok=True)
    for k in range(5):
        n = 96000 if (r == 1 and k == 4) else 48000
        inp = torch.randn(n, 256, generator=g).half()
        torch.save({"inp": inp, "emb": torch.randn(n, 512, generator=g).half()}, f"teacher/rank{r}/shard-{k:04d}.pt")
EOF2"""
# at rank 1's step-40 line its address-space limit becomes its current virtual size + 40 MiB (a batch system's vmem
# limit for the task, `ulimit -v` / prlimit --as)
AS53 = ("for p in $(pgrep -f train_distill.py); do tr '\\0' '\\n' < /proc/$p/environ | grep -qx RANK=1 || continue; "
        "pp=$(awk '{print $4}' /proc/$p/stat); tr '\\0' '\\n' < /proc/$pp/environ | grep -qx RANK=1 && continue; "
        "vm=$(awk '/^VmSize:/{print $2}' /proc/$p/status); lim=$(( (vm + 40*1024) * 1024 )); "
        "prlimit --pid $p --as=$lim:$lim && echo \"  prlimit_as: rank 1 pid $p vm ${vm} kB -> as $lim\" >&2; done")
SCENARIOS += [
    Scenario("b53_hang_prefetch_mmap_enomem_r1", "train_distill.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_distill.py", setup=TEACHER53, env=dict(ENV53),
             action=("shell", "[rank 1] step 40 ", AS53)),
    # the job (torchrun and its 3 ranks) in one memory cgroup of 1,200 MiB; the store torchrun hosts for the job holds
    # every rank's per-step ledger; orphaned ranks are left to end by themselves (up to 40 s)
    Scenario("b53_oom_agent_store_sample_ledger_killed", "train_clicks.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_clicks.py", env=dict(ENV53), job_mem_mib=1200,
             dmesg="/kubepods/burstable/pod-clicks", orphans_s=40),
    # from rank 0's step-10 line its child processes (the checkpoint writer) are in a memory cgroup of 40 MiB
    Scenario("b53_hang_async_ckpt_writer_oomkilled_r0", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py", env=dict(ENV53),
             action=("worker_cgroup", 0, 40, "rank=0 step=10 "), dmesg="/kubepods/burstable/pod-lm-r0"),
]
# 3,200 one-second clips per rank (16 kHz int16) with labels
SPEECH53 = r"""mkdir -p speech && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(53)
for r in range(2):
    np.save(f"speech/wav-{r}.npy", rng.integers(-8000, 8000, (3200, 16000), dtype=np.int16))
    np.save(f"speech/label-{r}.npy", rng.integers(0, 35, 3200))
EOF2"""
# at rank 1's step-5 line its 2 DataLoader workers go into a memory cgroup (v1) of 100 MiB with the OOM killer disabled
# (memory.oom_control = 1, a container run with --oom-kill-disable): at the limit they wait in the cgroup's OOM queue,
# alive; py-spy dumps of both ranks 15 s after that line, as an on-call engineer takes them during the hang
OOMPAUSE53 = ("cg=/sys/fs/cgroup/memory/zoo_rank_b53_; mkdir -p $cg && echo $((100*1024*1024)) > $cg/memory.limit_in_bytes"
              " && echo 1 > $cg/memory.oom_control && "
              "for p in $(pgrep -f train_speech.py); do tr '\\0' '\\n' < /proc/$p/environ | grep -qx RANK=1 || continue; "
              "pp=$(awk '{print $4}' /proc/$p/stat); tr '\\0' '\\n' < /proc/$pp/environ | grep -qx RANK=1 || continue; "
              "echo $p > $cg/cgroup.procs; echo \"  oom_pause: rank 1 worker $p (parent $pp)\" >&2; done")
SCENARIOS += [
    Scenario("b53_hang_loader_worker_oom_paused_pyspy_r1", "train_speech.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_speech.py", setup=SPEECH53, env=dict(ENV53),
             action=("both", ("shell", "rank 1 epoch 0 step 5/", OOMPAUSE53), ("pyspy", "rank 1 epoch 0 step 5/", 2, 15))),
]

# ---- batch 55 (h204): restarts and repeated attempts as a restarted job's logs really hold them: torchrun
# --max-restarts where a rank SIGKILLed in attempt 0 leaves a half-written checkpoint or an orphan holding a port and the
# restarted attempts fail differently; a restart storm on a bad sample reached again after every resume (all attempts in
# the --log-dir attempt_N folders); an elastic two-node job (--nnodes 1:2) whose node 1 leaves mid-run; a Slurm-requeue
# style rerun appended to the same log file; jobs that recover by themselves after one failed attempt; ids b55_* ----
ENV55 = {"OMP_NUM_THREADS": "1"}
# the team's feature cache server (started by rank 0 of the CTR job, detached in its own session)
CACHE55 = r"""cat > feature_cache.py <<'EOF2'
# The team's feature cache: deterministic 32-float feature rows per item id over HTTP (POST /rows, a JSON list).
import argparse
import json
import random
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
args = ap.parse_args()


class H(BaseHTTPRequestHandler):
    def do_POST(self):
        ids = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        rows = [[random.Random(i * 32 + k).gauss(0, 1) for k in range(32)] for i in ids]
        body = json.dumps(rows).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", args.port), H)
print(f"serving on 127.0.0.1:{args.port}", flush=True)
srv.serve_forever()
EOF2"""
# per-rank land-cover shards (10 classes); one tile of shard 2 came from the 13-class relabelling (class 12), at the
# 17th sample of rank 2's step-57 batch
LANDCOVER55 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(55)
for r in range(3):
    y = torch.randint(0, 10, (6400,), generator=g)
    x = torch.randn(6400, 13, generator=g) + torch.nn.functional.one_hot(y, 13).float() * 1.5
    if r == 2:
        y[56 * 32 + 17] = 12
    torch.save({"x": x, "y": y}, f"data/shard-{r}.pt")
EOF2"""
SCENARIOS += [
    # attempt 0: rank 0 SIGKILLed while it writes ckpt/step-000060.pt (at 6 MB of its 25 MB); the restarted attempts
    # resume from the newest file in ckpt/, the half-written one
    Scenario("b55_inf_restart_kill_midsave_halfwritten_ckpt_logdir_r0", "train_ranker.py",
             "torchrun --nproc-per-node 2 --max-restarts 2 --log-dir logs --tee 3 --master-port {port} train_ranker.py",
             env=dict(ENV55), action=("kill_when_file", 0, signal.SIGKILL, "ckpt/step-000060.pt", 6_000_000)),
    # attempt 0: rank 1 SIGKILLed at its step 60; torchrun ends rank 0's process group, but rank 0's feature cache
    # server runs in its own session and keeps its port: every restarted rank 0 fails to start it
    Scenario("b55_inf_restart_sigkill_orphan_cache_port_logdir_r1", "train_ctr.py",
             "torchrun --nproc-per-node 2 --max-restarts 2 --log-dir logs --tee 3 --master-port {port} train_ctr.py",
             setup=CACHE55, env={**ENV55, "FEATURE_CACHE_PORT": "{port_asset}"},
             action=("kill", 1, signal.SIGKILL, "[rank1] step 60/200")),
    # every attempt resumes from the step-40 checkpoint and meets rank 2's class-12 tile again at step 57
    Scenario("b55_data_restart_storm_label_oob_step57_c10d_logdir_r2", "train_landcover.py",
             "torchrun --nnodes 1 --nproc-per-node 3 --max-restarts 3 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--log-dir logs --redirects 3 train_landcover.py", setup=LANDCOVER55,
             # the job's environment carries pytorch/pytorch#135712's workaround (without it every restarted attempt
             # failed in gloo's connectFullMesh to the previous attempt's addresses; see README, batch 55)
             env={**ENV55, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),
]
ELASTIC55 = ("torchrun --nnodes 1:2 --nproc-per-node 2 --max-restarts 3 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--rdzv-id sentiment-elastic --rdzv-conf last_call_timeout=3,join_timeout=40 train_sentiment.py")
SCENARIOS += [
    # node 1 (its agent and both workers) SIGKILLed once rank 0 logs step 60: a machine lost; node 0's agent restarts its
    # workers, re-rendezvouses alone (min 1 node) and the job goes on with world size 2 from the step-60 checkpoint
    Scenario("b55_inf_elastic_node1_lost_rerdzv_c10d_twonode_n1", "train_sentiment.py", ELASTIC55, cmd2=ELASTIC55,
             env=dict(ENV55), action=("kill_node", 1, signal.SIGKILL, "rank 0/4 step 60/160")),
]
# the Slurm batch script as the user wrote it; the console's loop stands in for Slurm requeueing it once (the job's
# SLURM_RESTART_COUNT), each run appended to the same output file (--open-mode=append)
JOB55 = r"""mkdir -p logs && cat > job.sh <<'EOF2'
#!/bin/bash
#SBATCH --job-name=kws-ddp --nodes=1 --ntasks-per-node=1 --cpus-per-task=2
#SBATCH --requeue --open-mode=append --output=logs/kws-ddp-41873.log
echo "[$(date '+%F %T')] job 41873 (restart ${SLURM_RESTART_COUNT:-0}) starting on $(hostname)"
torchrun --nproc-per-node 2 --master-port $MASTER_PORT train_kws.py
echo "[$(date '+%F %T')] job 41873 (restart ${SLURM_RESTART_COUNT:-0}) torchrun exit code $?"
EOF2"""
# the preemption: SIGTERM to the running torchrun (Slurm signals the job's step; torchrun forwards it to its workers)
PREEMPT55 = ("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | "
             "grep -qx 'ZOO_RUN=b55_inf_requeue_preempt_emergency_ckpt_keyerror_appendlog' && "
             "tr '\\0' ' ' < $p/cmdline | grep -q 'bin/torchrun' && kill -TERM ${p#/proc/} && "
             "echo \"  preempt: SIGTERM to torchrun ${p#/proc/}\" >&2; done")
# the shared checkpoint volume (16 MiB tmpfs) holds 12 MiB of another experiment's eval dumps, deleted by their owner's
# cleanup once the job's first save has failed
VOLUME55 = r"""mkdir -p ckpt && mount -t tmpfs -o size=16m tmpfs ckpt && mkdir -p ckpt/exp-0412-evaldump && \
head -c 12582912 /dev/urandom > ckpt/exp-0412-evaldump/logits-val.bin"""
SCENARIOS += [
    Scenario("b55_inf_requeue_preempt_emergency_ckpt_keyerror_appendlog", "train_kws.py",
             "for n in 0 1; do SLURM_RESTART_COUNT=$n bash job.sh >> logs/kws-ddp-41873.log 2>&1; done",
             setup=JOB55, env={**ENV55, "MASTER_PORT": "{port}"},
             action=("shell4", "rank 0 step 120/200", PREEMPT55)),
    Scenario("b55_st_restart_ckpt_volume_full_transient_recovers_c10d", "train_tagger.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--log-dir logs --tee 3 train_tagger.py", setup=VOLUME55, teardown="umount ckpt",
             env={**ENV55, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"},
             action=("shell4", "iostream error", "rm -rf ckpt/exp-0412-evaldump && echo '  cleanup: eval dumps deleted' >&2")),
]
ELASTIC55B = ("torchrun --nnodes 1:2 --nproc-per-node 2 --max-restarts 3 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
              "--rdzv-id fashion-attr --rdzv-conf last_call_timeout=3,join_timeout=40 train_attrs.py")
JOB55B = r"""mkdir -p logs && cat > job.sh <<'EOF2'
#!/bin/bash
#SBATCH --job-name=speech-cmd --nodes=1 --cpus-per-task=2 --mem=8G
#SBATCH --requeue --open-mode=append --output=logs/speech-cmd-41902.log
echo "=== $(date '+%F %T') speech-cmd job 41902, SLURM_RESTART_COUNT=${SLURM_RESTART_COUNT:-0}, node $(hostname) ==="
torchrun --nproc-per-node 2 --master-port $MASTER_PORT train_speech.py
rc=$?
echo "=== $(date '+%F %T') torchrun exited with $rc ==="
exit $rc
EOF2"""
# the team's experiment-tracking service (a stand-in REST endpoint); it is down (being redeployed) when the job starts
# and comes back once the job's first metrics post has failed
TRACK55 = r"""mkdir -p .svc && cat > .svc/tracking.py <<'EOF2'
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF2
echo {port_asset} > .svc/port"""
SCENARIOS += [
    # node 1's agent gets SIGTERM once rank 0 logs step 60 (the spot node taken back: the scheduler's scale-down); it
    # stops its workers and leaves; node 0 is left to re-rendezvous
    Scenario("b55_inf_elastic_node1_sigterm_scale_down_c10d_twonode_n1", "train_attrs.py", ELASTIC55B, cmd2=ELASTIC55B,
             env=dict(ENV55), action=("kill_node_launcher", 1, signal.SIGTERM, "rank 0 of 4 step 60/150")),
    # the first run's rank 1 is in a 480 MiB memory cgroup (the node's container limit); after the requeue the job's
    # ranks are not limited (the requeued run landed on a node with more memory)
    Scenario("b55_oom_requeue_hard_example_cache_r1_rerun_completes", "train_speech.py",
             "for n in 0 1; do SLURM_RESTART_COUNT=$n bash job.sh >> logs/speech-cmd-41902.log 2>&1; done",
             setup=JOB55B, env={**ENV55, "MASTER_PORT": "{port}"}, action=("cgroup", 1, 480)),
    Scenario("b55_inf_restart_tracking_server_refused_recovers_c10d", "train_forecast.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--log-dir logs --tee 3 train_forecast.py", setup=TRACK55,
             env={**ENV55, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1", "TRACKING_URI": "http://127.0.0.1:{port_asset}"},
             action=("shell4", "[Errno 111] Connection refused",
                     "ZOO_RUN=b55_inf_restart_tracking_server_refused_recovers_c10d setsid nohup python3 .svc/tracking.py "
                     "$(cat .svc/port) > /dev/null 2>&1 & echo '  tracking service back up' >&2")),
]
# pre-tokenized shards (<= 128 tokens each); one support transcript in shard 0 (example 520, in rank 0's step-33 batch)
# went through the pipeline's fallback path, which skipped the truncation: 311 tokens
INTENT55 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(55)
for r in range(2):
    with open(f"data/tok-{r}.jsonl", "w") as f:
        for i in range(1600):
            label = rng.randrange(20)
            n = 311 if (r == 0 and i == 520) else rng.randint(6, 128)
            ids = [rng.randrange(1, 8000) for _ in range(n)]
            ids[0] = 100 + label
            f.write(json.dumps({"ids": ids, "label": label}) + "\n")
EOF2"""
SCENARIOS += [
    # every attempt resumes from the step-20 checkpoint and meets the 311-token example again at step 33
    Scenario("b55_data_restart_storm_overlong_sample_posemb_c10d_tee_r0", "train_intent.py",
             "torchrun --nnodes 1 --nproc-per-node 2 --max-restarts 3 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port} "
             "--log-dir logs --tee 3 train_intent.py", setup=INTENT55,
             env={**ENV55, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}),
]

# ---- batch 54 (h203): hangs whose evidence is collective traces and stack dumps, as on-call collects them for a
# hung job: every run keeps torch's Flight Recorder on (TORCH_FR_BUFFER_SIZE, gloo) and the script writes each rank's
# trace to fr/ on the collective timeout (two runs: also from a SIGTERM handler), and py-spy dumps of every rank are taken
# while the job hangs (record.py's "pyspy"): a rank that skips the gradient all_reduce in its spike guard, a rank that
# all_reduces a normalizer the others broadcast, an empty validation-loss tensor in an all_reduce, a rank blocked on
# its feature FIFO after the streaming sidecar stopped, a rank in the barrier of its data-parallel group while its
# peers are in the tensor-parallel one, rank 0 exporting alone past the others' 20 s barrier, and a reporter thread
# whose all_gather lands between different gradient all-reduces on different ranks; ids b54_* ----
ENV54 = {"OMP_NUM_THREADS": "1", "TORCH_FR_BUFFER_SIZE": "2000"}
SENSORS54 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(54)
w = torch.randn(32, generator=g)
for r in range(3):
    x = torch.randn(300 * 64, 32, generator=g)
    y = x @ w * 0.3 + 0.1 * torch.randn(len(x), generator=g)
    if r == 1:  # a logger firmware bug: one burst of rows recorded in raw counts, not volts
        x[136 * 64:137 * 64] *= 300.0
    torch.save({"x": x, "y": y}, f"data/sensors-{r}.pt")
EOF2"""
REQUESTS54 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(54)
w = torch.randn(40, generator=g)
for r in range(3):
    n = 300 * 256
    x = torch.randn(n, 40, generator=g) * 3 + 1
    y = ((x - 1) @ w / 3 + 0.5 * torch.randn(n, generator=g) > 0).float()
    valid = 0.95 if r != 2 else 0.5  # rank 2's log: the mobile-app traffic, half of each batch is padding
    mask = torch.rand(n, generator=g) < valid
    torch.save({"x": x, "y": y, "mask": mask}, f"data/requests-{r}.pt")
EOF2"""
INTENTS54 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(54)
for r in range(3):
    label = torch.randint(0, 24, (3000,), generator=g)
    ids = torch.randint(0, 5000, (3000, 12), generator=g)
    ids[:, 0] = label * 100 + 7
    torch.save({"ids": ids, "label": label}, f"data/train-{r}.pt")
    nval = 200 if r != 2 else 40  # the new locale's validation split: 40 utterances so far
    vl = torch.randint(0, 24, (nval,), generator=g)
    vi = torch.randint(0, 5000, (nval, 12), generator=g)
    vi[:, 0] = vl * 100 + 7
    torch.save({"ids": vi, "label": vl}, f"data/val-{r}.pt")
EOF2"""
# the node's feature-streaming sidecar: one feeder per rank writing fixed-size records into the rank's FIFO (started
# with the job, each in its own session; they carry ZOO_RUN, so the recorder ends them)
FIFO54 = r"""mkdir -p stream && cat > stream/feeder.py <<'EOF2'
import os, random, struct, sys
r = int(sys.argv[1])
open(f"stream/feeder-{r}.pid", "w").write(str(os.getpid()))
rec = struct.Struct("<40fi")
rng = random.Random(r)
with open(f"stream/rank{r}.fifo", "wb") as f:
    while True:
        y = rng.randrange(50)
        x = [rng.gauss(0, 1) + (1.5 if i == y % 40 else 0.0) for i in range(40)]
        f.write(rec.pack(*x, y))
EOF2
for r in 0 1 2; do mkfifo stream/rank$r.fifo; setsid nohup python stream/feeder.py $r > /dev/null 2>&1 & done"""
TOKENS54 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(54)
for r in range(3):
    torch.save(torch.randint(0, 4096, (200_000,), generator=g), f"data/tokens-{r}.pt")
EOF2"""
TR54 = "torchrun --nproc-per-node {n} --master-port {{port}} {f}"
SCENARIOS += [
    # (a) rank 1's batch at step 137 holds the raw-count rows: its local spike guard skips the gradient all_reduce
    Scenario("b54_hang_spike_guard_skip_allreduce_fr_r1", "train_sensors.py",
             TR54.format(n=3, f="train_sensors.py"), setup=SENSORS54, env=dict(ENV54),
             action=("pyspy", "skipping this update", 3, 6)),
    # (b) ranks 0-1 freeze the normalizer near step 83 (20,000 valid rows), rank 2 (half padding) near step 157: at
    # the step-100 sync ranks 0-1 broadcast, rank 2 all_reduces
    Scenario("b54_hang_normalizer_bcast_vs_allreduce_fr_r2", "train_ctr.py",
             TR54.format(n=3, f="train_ctr.py"), setup=REQUESTS54, env=dict(ENV54),
             action=("pyspy", "rank2: step 75/300", 3, 8)),
    # (c) rank 2's validation split has 40 utterances: with batch 64 and drop_last its loss tensor is empty
    Scenario("b54_hang_empty_val_loss_allreduce_size_r2", "train_intent.py",
             TR54.format(n=3, f="train_intent.py"), setup=INTENTS54, env=dict(ENV54),
             action=("pyspy", "step 50 loss", 3, 6)),
    # (d) from rank 1's step-60 line its feeder (the sidecar process) is stopped, as a sidecar stuck on the store is
    Scenario("b54_hang_fifo_feeder_stalled_pyspy_r1", "train_spkid.py",
             TR54.format(n=3, f="train_spkid.py"), setup=FIFO54, env=dict(ENV54),
             action=("both", ("shell", "rank 1: step 60/400",
                              "kill -STOP $(cat stream/feeder-1.pid); echo '  sidecar: feeder 1 stopped' >&2"),
                     ("pyspy", "rank 1: step 60/400", 3, 9))),
    # (e) at step 80 rank 2 (it keeps the embedding's optimizer state) waits in its dp group [0,2]'s barrier
    Scenario("b54_hang_subgroup_barrier_dp_vs_tp_4r_r2", "train_tp.py",
             TR54.format(n=4, f="train_tp.py"), env=dict(ENV54),
             action=("pyspy", "step 80: wrote ckpt", 4, 6)),
    # (f) rank 0 alone exports the final model (gzip level 9, minutes on this host) while the others wait at the
    # barrier with the job's 20 s process-group timeout
    Scenario("b54_hang_final_save_rank0_barrier_timeout_r0", "train_lm.py",
             TR54.format(n=3, f="train_lm.py"), setup=TOKENS54, env=dict(ENV54),
             action=("pyspy", "rank 0: exporting final model", 3, 8)),
    # (g) the reporter thread's all_gather, timed by the wall clock, lands between different gradient all-reduces
    Scenario("b54_hang_reporter_thread_allgather_order_fr", "train_cnn.py",
             TR54.format(n=3, f="train_cnn.py"), env=dict(ENV54),
             action=("pyspy", "training started (reporter", 3, 8)),
]
ALERTS54 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(54)
w = torch.randn(24, generator=g)
for r in range(3):
    x = torch.randn(6000, 24, generator=g)
    y = ((x @ w) > 2.0).float()
    torch.save({"x": x, "y": y}, f"data/alerts-train-{r}.pt")
    vx = torch.randn(500, 24, generator=g)
    vy = ((vx @ w) > 2.0).float()
    if r == 1:  # slice 1: the new merchant segment, no alert there confirmed as fraud yet
        vy.zero_()
    torch.save({"x": vx, "y": vy}, f"data/alerts-val-{r}.pt")
EOF2"""
TAGGER54 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
            "train_tagger.py")
SCENARIOS += [
    # (d) rank 0's DataLoader worker reads the FIFO; from the step-60 log line rank 0's feeder is stopped; torchrun
    # --redirects 3 (rank output only in logs/), so the trigger is looked for in the log files too ("shell4")
    Scenario("b54_hang_loader_worker_fifo_logdir_r0", "train_spkid.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --redirects 3 train_spkid.py",
             setup=FIFO54, env=dict(ENV54),
             action=("both", ("shell4", "step 60/400 loss",
                              "kill -STOP $(cat stream/feeder-0.pid); echo '  sidecar: feeder 0 stopped' >&2"),
                     ("pyspy", "step 60/400 loss", 3, 9))),
    # (f) two nodes: rank 0 (node 0) alone runs the final evaluation, the 3 others wait at the barrier (20 s timeout)
    Scenario("b54_hang_rank0_final_eval_barrier_twonode_r0", "train_tagger.py", TAGGER54.format(k=0, port="{port}"),
             cmd2=TAGGER54.format(k=1, port="{port}"), env=dict(ENV54),
             action=("pyspy", "rank0: running final evaluation", 4, 8)),
    # (a) rank 1's validation slice has no confirmed fraud: auc_histograms returns before its all_reduce
    Scenario("b54_hang_auc_early_return_skip_allreduce_spawn_r1", "train_alerts.py", "python train_alerts.py 3",
             setup=ALERTS54, env={**ENV54, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"},
             action=("pyspy", "[proc 1] step 40 loss", 3, 6)),
]

# ---- batch 57 (h208): failures inside higher-level training loops whose own logging wraps the error: Hugging Face
# Trainer (a null text reaching the tokenizer in one rank's collator; a scheduler name the TrainingArguments check
# rejects; a checkpoint save filling the output volume under torchelastic's @record with its error files; an
# evaluation whose DataLoader worker stops on one rank), accelerate (a config-file key the launcher rejects as from
# another version; an encoder exported by a newer transformers; a notebook_launcher process SIGKILLed mid-epoch); ids
# b57_* ----
# the scripts load the tokenizer and encoder from folders their setup writes ("tok", "models/encoder-small"); offline,
# so that a missing folder is an error and never a hub download (added after recording: the folders were there)
ENV57 = {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
# the support team's word-level tokenizer (tok/), saved with transformers
TOK57 = r"""python - <<'EOF2'
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
words = ("refund order late cancel my the a please where is package card charged twice password reset login "
         "account address change delivery broken item return label invoice help agent speak human thanks "
         "red blue shirt shoes phone case cable charger lamp desk chair kettle mug great bad ok love hate").split()
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in words:
    vocab[w] = len(vocab)
t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
t.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=t, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                        sep_token="[SEP]").save_pretrained("tok")
EOF2
"""
# 800 labelled chats; chat 517's transcript was redacted by the privacy filter after labelling: its text is null
CHATS57 = TOK57 + r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(57)
words = "refund order late cancel my the please where is package card charged twice password reset login".split()
intents = ["refund", "tracking", "account", "billing"]
with open("data/chats.jsonl", "w") as f:
    for i in range(800):
        text = None if i == 517 else " ".join(rng.choice(words) for _ in range(rng.randint(4, 12)))
        f.write(json.dumps({"chat_id": 90000 + i, "text": text, "intent": rng.choice(intents)}) + "\n")
EOF2"""
TICKETS57 = TOK57 + r"""mkdir -p data configs && python - <<'EOF2'
import json, random
rng = random.Random(5)
words = "refund order late cancel invoice card charged twice password reset login address change".split()
with open("data/tickets.jsonl", "w") as f:
    for i in range(640):
        f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(8)),
                            "queue": rng.choice(["billing", "auth", "shipping"])}) + "\n")
EOF2
cat > configs/train_args.json <<'EOF2'
{
  "output_dir": "out/router",
  "per_device_train_batch_size": 32,
  "num_train_epochs": 3,
  "learning_rate": 0.0005,
  "lr_scheduler_type": "cosine_warmup",
  "warmup_steps": 20,
  "logging_steps": 10,
  "save_strategy": "no",
  "report_to": [],
  "use_cpu": true,
  "ddp_backend": "gloo",
  "ddp_timeout": 30,
  "disable_tqdm": true
}
EOF2"""
# the checkpoint volume: a 3 MiB tmpfs (a scratch volume nearly full of other runs' checkpoints)
TITLES57 = TOK57 + r"""mkdir -p data ckpt && mount -t tmpfs -o size=3m tmpfs ckpt && python - <<'EOF2'
import json, random
rng = random.Random(9)
words = "red blue shirt shoes phone case cable charger lamp desk chair kettle mug".split()
with open("data/titles.jsonl", "w") as f:
    for i in range(1600):
        f.write(json.dumps({"title": " ".join(rng.choice(words) for _ in range(6)),
                            "cat": rng.choice(["apparel", "electronics", "home"])}) + "\n")
EOF2"""
FAQ57 = TOK57 + r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(11)
words = "where is my package refund order late password reset login account address change help".split()
for name, n in (("faq-train", 640), ("faq-eval", 960)):
    with open(f"data/{name}.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({"q": " ".join(rng.choice(words) for _ in range(7)), "faq": f"faq-{rng.randint(0, 9)}"}) + "\n")
EOF2"""
# the repository's accelerate config for the CPU box; someone added the accumulation steps they wanted to it
ACCEL_CFG57 = r"""mkdir -p configs && cat > configs/accelerate_cpu.yaml <<'EOF2'
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: 'no'
num_machines: 1
num_processes: 2
machine_rank: 0
main_process_ip: 127.0.0.1
main_process_port: {port}
rdzv_backend: static
same_network: true
use_cpu: false
gradient_accumulation_steps: 4
EOF2"""
# the pretraining group's export of the encoder (config.json written by their newer transformers, model type
# 'modernbert_v2'), the tokenizer and 480 reviews
ENCODER57 = TOK57 + r"""mkdir -p configs models/encoder-small data && cat > configs/accelerate_cpu.yaml <<'EOF2'
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: 'no'
num_machines: 1
num_processes: 2
machine_rank: 0
main_process_ip: 127.0.0.1
main_process_port: {port}
rdzv_backend: static
same_network: true
use_cpu: false
EOF2
cat > models/encoder-small/config.json <<'EOF2'
{
  "architectures": ["ModernBertV2ForMaskedLM"],
  "model_type": "modernbert_v2",
  "hidden_size": 128,
  "num_hidden_layers": 4,
  "num_attention_heads": 4,
  "intermediate_size": 512,
  "vocab_size": 64,
  "max_position_embeddings": 128,
  "global_attn_every_n_layers": 2,
  "torch_dtype": "float32",
  "transformers_version": "5.31.0"
}
EOF2
python - <<'EOF2'
import json, random
rng = random.Random(3)
words = "great bad ok love hate item broken return phone case lamp".split()
with open("data/reviews.jsonl", "w") as f:
    for i in range(480):
        f.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(6)), "y": rng.randint(0, 1)}) + "\n")
EOF2"""
SCENARIOS += [
    Scenario("b57_data_trainer_null_text_collator_r1", "train_intent.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_intent.py", setup=CHATS57, env=dict(ENV57)),
    Scenario("b57_cfg_trainer_args_scheduler_name_json", "train_router.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_router.py configs/train_args.json",
             setup=TICKETS57, env=dict(ENV57)),
    Scenario("b57_st_trainer_save_tmpfs_record_r0", "train_titles.py",
             "torchrun --nproc-per-node 2 --master-port {port} --log-dir logs --tee 3 train_titles.py",
             setup=TITLES57, teardown="umount ckpt", env=dict(ENV57)),
    # at rank 1's epoch-1 step-20 line the process is SIGKILLed from outside the job (a node agent / another
    # tenant's cleanup script killing a python process)
    Scenario("b57_inf_notebook_launcher_sigkill_r1", "train_sentiment.py", "NB_PORT={port} python train_sentiment.py",
             env=dict(ENV57),
             # the forked processes carry RANK only in their in-memory environment (not /proc/<pid>/environ): rank 1
             # is the launching process's second child running the script (rank order = start order)
             action=("shell", "[process 1] epoch 1 step 20/",
                     "pids=$(for p in $(pgrep -f train_sentiment.py); do [ \"$(readlink /proc/$p/cwd)\" = \"$PWD\" ] "
                     "&& echo $p; done | sort -n); set -- $pids; kill -KILL $3; "
                     "echo \"  kill: rank 1 (pid $3; launcher $1, rank 0 $2) SIGKILL\" >&2")),
    # once rank 1 has printed its dataset sizes, its first DataLoader worker (the evaluation's, eval_on_start) is
    # stopped and never continued (a worker stuck on its storage read, as in D state)
    Scenario("b57_hang_trainer_eval_worker_stopped_r1", "train_faq.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_faq.py", setup=FAQ57, env=dict(ENV57),
             action=("both", ("worker_stop", 1, "[rank 1] train 640 eval 960 examples"),
                     ("pyspy", "[rank 1] train 640 eval 960 examples", 2, 10))),
    Scenario("b57_cfg_accel_yaml_unknown_key_grad_accum", "train_kws.py",
             "accelerate launch --config_file configs/accelerate_cpu.yaml train_kws.py", setup=ACCEL_CFG57,
             env=dict(ENV57)),
    Scenario("b57_cfg_hf_model_type_newer_accel", "finetune_reviews.py",
             "accelerate launch --config_file configs/accelerate_cpu.yaml finetune_reviews.py", setup=ENCODER57,
             env=dict(ENV57)),
]

# ---- batch 58 (h209): noisy real-looking logs with the failure buried: 150-400 steps before the failure, tqdm bars redrawn with
# carriage returns (on rank 0 or on every rank), ANSI-coloured logging, the deprecation and CUDA-less warnings of GPU
# recipes repeated per rank, four ranks' output interleaved without prefixes, JSON logging (one object per line) from
# one or every rank, ISO 8601 / epoch-seconds / glog-style timestamps, tensors printed in full (lines of 10k+
# characters), a dataset path with a Latin-1 byte; one failure each (an exception on one rank, the kernel OOM killer,
# a malformed CSV row, a full checkpoint disk, a short shard, connections reset, a straggler stopped in bursts, a frozen
# rank, a stale schedule length, a fixed-size view on the last batch); ids b58_* ----
ENV58 = {"OMP_NUM_THREADS": "1"}
TR58 = "torchrun --nproc-per-node 4 --master-port {port} "
# validation embeddings (2,000 patches, 8 classes); the rare class 7 (hairline cracks) has 3 patches, at indices 12,
# 401 and 1503: with the strided split val[rank::4] ranks 0, 1 and 3 hold one each, rank 2 none
DEFECT58 = r"""mkdir -p data && python - <<'EOF2'
import torch
centers = torch.randn(8, 96, generator=torch.Generator().manual_seed(7)) * 1.5
g = torch.Generator().manual_seed(58)
y = torch.randint(0, 7, (2000,), generator=g)
y[[12, 401, 1503]] = 7
torch.save({"x": centers[y] + torch.randn(2000, 96, generator=g), "y": y}, "data/val_embeddings.pt")
EOF2"""
# 14,400 uint8 crops (3x32x32) per rank
CROPS58 = r"""mkdir -p crops && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(58)
for r in range(4):
    np.save(f"crops/shard-{r:03d}.npy", rng.integers(0, 256, (14400, 3, 32, 32), dtype=np.uint8))
EOF2"""
# meter exports under data/r\xe9gion-sud/ (the export job names the folder in Latin-1); rank 3's part has one row whose
# readings the meter did not send ('N/A' in the 7th lag) at data row 1843
METER58 = r"""python - <<'EOF2'
import os, random
d = b"data/r\xe9gion-sud"
os.makedirs(d, exist_ok=True)
rng = random.Random(58)
for r in range(4):
    with open(os.path.join(d, b"part-%05d.csv" % r), "w") as f:
        f.write("meter_id," + ",".join(f"lag_{k}" for k in range(24, 0, -1)) + ",load_kw\n")
        for i in range(2400):
            base = rng.uniform(0.5, 3.0)
            vals = [f"{base + rng.gauss(0, 0.1):.3f}" for _ in range(25)]
            if r == 3 and i == 1843:
                vals[6] = "N/A"
            f.write(f"M{r}{i:06d}," + ",".join(vals) + "\n")
EOF2"""
# the node's checkpoint volume: a 14 MiB tmpfs at ckpt/ (one checkpoint is ~9 MB)
CKPT58 = "mkdir -p ckpt && mount -t tmpfs -o size=14m tmpfs ckpt"
# the nightly export's parts: 3,200 impressions each, but part 3's export stopped at 2,600
CTR58 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(58)
for r in range(4):
    n = 3200 if r != 3 else 2600
    ids = torch.randint(0, 2**14, (n, 8), generator=g)
    torch.save({"ids": ids, "clicked": ((ids[:, 0] % 7) < 2).float()}, f"data/part-{r}.pt")
EOF2"""
# the run config of the previous dataset (7,680 reviews: 120 batches of 16 per rank); this dataset has 8,000 (125)
SENT58 = r"""mkdir -p configs data && cat > configs/sentiment.yaml <<'EOF2'
# sentiment v3 - 4 workers
batch_size: 16
epochs: 3
steps_per_epoch: 120   # len(train_loader) per worker
lr: 0.0005
max_lr: 0.003
EOF2
python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(58)
ids = torch.randint(1, 8000, (8000, 40), generator=g)
torch.save({"ids": ids, "label": ids[:, 0] % 3}, "data/reviews_tok.pt")
EOF2"""
# 29,480 windows: 7,370 per rank = 230 full batches of 32 and one of 10
WIN58 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(58)
x = torch.randn(29480, 48, generator=g)
torch.save({"x": x, "y": (x[:, :12] > 0.5).float()}, "data/windows.pt")
EOF2"""
SCENARIOS += [
    Scenario("b58_uc_per_class_recall_zerodiv_r2_tqdm_ansi", "train_defects.py", TR58 + "train_defects.py",
             setup=DEFECT58, env=dict(ENV58)),
    # rank 1's container memory limit (cgroup v1) from its start; its Dataset's decoded-crop cache grows every step;
    # the host kernel's OOM-killer lines of the event go to dmesg.txt
    Scenario("b58_oom_decoded_cache_r1_jsonlog", "train_embed.py", TR58 + "train_embed.py", setup=CROPS58,
             env=dict(ENV58), action=("cgroup", 1, 420), dmesg="/kubepods/burstable/pod-embed-w1"),
    # LC_ALL=C on the node: Python's UTF-8 mode writes the folder's Latin-1 byte through (surrogateescape)
    Scenario("b58_data_csv_na_row_r3_glog_latin1", "train_loadfc.py", TR58 + "train_loadfc.py", setup=METER58,
             env={**ENV58, "LC_ALL": "C"}),
    Scenario("b58_st_ckpt_tmpfs_enospc_r0_isots", "train_kws.py", TR58 + "train_kws.py", setup=CKPT58,
             teardown="umount ckpt", env={**ENV58, "TZ": "Europe/Berlin"}),
    Scenario("b58_hang_short_shard_r3_tqdm_all", "train_ctr.py", TR58 + "train_ctr.py", setup=CTR58, env=dict(ENV58)),
    # rank 1's established TCP connections destroyed (ss -K) when rank 0 logs step 150: a NIC / switch port reset
    Scenario("b58_net_conn_reset_r1_rank0_json", "train_basket.py", TR58 + "train_basket.py", env=dict(ENV58),
             action=("ss_kill", 1, '"step": 150,')),
    # from rank 2's step-100 timing line it is stopped 150 ms after every 150 ms running (SIGSTOP / SIGCONT) to the
    # end: a node agent or a co-located process taking the rank's CPU in bursts
    Scenario("b58_slow_stopcont_r2_tqdm_postfix", "train_fraud.py", TR58 + "train_fraud.py", env=dict(ENV58),
             action=("stopcont_until", 2, "rank=2 step=100 ", None, 150, 150)),
    # rank 2's container paused (cgroup v1 freezer) at its step-150 metric line, thawed 26 s later
    Scenario("b58_inf_frozen_rank2_hang_glog", "train_intent.py", TR58 + "train_intent.py", env=dict(ENV58),
             action=("freeze", 2, "rank=2 step=150 ", 26)),
    Scenario("b58_cfg_onecycle_stale_steps_yaml_json", "train_sentiment.py", TR58 + "train_sentiment.py",
             setup=SENT58, env=dict(ENV58)),
    Scenario("b58_uc_view_fixed_batch_last_fulltensor", "train_windows.py", TR58 + "train_windows.py", setup=WIN58,
             env=dict(ENV58)),
]

# ---- batch 56 (h207): logs where only rank 0 prints, as most users' scripts do (a print helper that silences the
# other ranks, logging configured on rank 0 only, torchrun's --local-ranks-filter 0, a wrapper that sends the other
# ranks to /dev/null): a non-zero rank's exception seen only in its stderr traceback or in torchrun's summary; a
# non-zero rank SIGKILLed from outside or by its memory cgroup; hangs where a non-zero rank stops entering collectives
# (its container paused; a calibration loop that never ends on an empty held-out set) while rank 0 waits in a barrier;
# a non-zero rank slowed (SIGSTOP/SIGCONT bursts, another tenant's busy processes on its core) while rank 0 prints
# the job's step times; a data error in one rank's shard; a job-wide slowdown from mid-run (autograd's anomaly mode
# switched on by the script's loss-spike guard); ids b56_* ----
ENV56 = {"OMP_NUM_THREADS": "1"}
# each rank's part of the support-chat export (1,280 lines); part 3's line 611 was cut mid-record when the export job
# was restarted, and the next record starts on the following line
CHAT56 = r"""mkdir -p data && python - <<'EOF2'
import json, random
random.seed(56)
words = "order refund late package card charge account password login cancel subscription upgrade plan address".split()
for r in range(4):
    with open(f"data/part-{r:02d}.jsonl", "w") as f:
        for i in range(1280):
            intent = random.randrange(12)
            text = " ".join(random.choice(words) for _ in range(random.randint(4, 30))) + f" i{intent}"
            line = json.dumps({"id": f"c{r}-{i}", "text": text, "intent": intent})
            if r == 3 and i == 610:
                line = line[:57]
            f.write(line + "\n")
EOF2"""
# toxicity comments from 9 sites; held-out = comments before the cut-off date; sites 6-8 (rank 1's, onboarded after
# the cut-off) have none
TOX56 = r"""python - <<'EOF2'
import json
import torch
g = torch.Generator().manual_seed(56)
n = 9 * 700
site = torch.arange(n) % 9
x = torch.randn(n, 256, generator=g)
y = ((x[:, :8].sum(1) + 0.5 * torch.randn(n, generator=g)) > 1.5).float()
heldout = (torch.rand(n, generator=g) < 0.15) & (site < 6)
torch.save({"x": x, "y": y, "site": site, "heldout": heldout}, "comments.pt")
json.dump({"0": [0, 1, 2], "1": [6, 7, 8], "2": [3, 4, 5]}, open("sites.json", "w"))
EOF2"""
# node-local scratch per rank; rank 2's (a 4 MiB volume standing in for a nearly full NVMe) still holds 2.5 MB of a
# previous job's files
SCRATCH56 = r"""mkdir -p scratch/rank0 scratch/rank1 scratch/rank2 && mount -t tmpfs -o size=4m tmpfs scratch/rank2 &&
head -c 2621440 /dev/urandom > scratch/rank2/prev_job_optim_shard.pt &&
cat > run_rank.sh <<'EOF2'
#!/bin/bash
# keep the console readable: only rank 0 talks
if [ "$RANK" != "0" ]; then
    exec python train_tagger.py "$@" > /dev/null 2>&1
fi
exec python train_tagger.py "$@"
EOF2
chmod +x run_rank.sh"""
SCENARIOS += [
    Scenario("b56_uc_last_rank_remainder_view_mae_print_r2", "main_pretrain.py",
             "torchrun --nproc-per-node 3 --master-port {port} main_pretrain.py", env=dict(ENV56)),
    Scenario("b56_data_jsonl_bad_line_ranks_filter_r3", "train_intent.py",
             "torchrun --nproc-per-node 4 --role rank --tee 3 --local-ranks-filter 0 --master-port {port} train_intent.py",
             setup=CHAT56, env=dict(ENV56)),
    # rank 2 SIGKILLed when rank 0 logs step 120 (a node agent / an operator's kill -9 on the wrong PID)
    Scenario("b56_inf_sigkill_r2_logging_rank0", "train_basket.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_basket.py", env=dict(ENV56),
             action=("kill", 2, signal.SIGKILL, "step 120/400")),
    # rank 1's container memory limit (cgroup v1) of 600 MiB; the kernel OOM killer ends it
    Scenario("b56_oom_memcg_r1_hardneg_cache_print0", "train_retrieval.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_retrieval.py", env=dict(ENV56),
             action=("cgroup", 1, 600)),
    # rank 2's container paused (cgroup v1 freezer, as `docker pause` / a node's live migration) when rank 0 starts
    # epoch 1's evaluation; thawed 28 s later, after the others' 20 s barrier timeout
    Scenario("b56_hang_paused_r2_eval_barrier_print0", "train_kws.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_kws.py", env=dict(ENV56),
             action=("freeze", 2, "epoch 1 train done", 28)),
    Scenario("b56_hang_nan_temp_scaling_empty_val_r1", "train_tox.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tox.py", setup=TOX56, env=dict(ENV56)),
    # from rank 0's step-60 line rank 1 is stopped 150 ms after every 300 ms running, to the end
    Scenario("b56_slow_stopcont_r1_rank0_steptime", "train_credit.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_credit.py", env=dict(ENV56),
             action=("stopcont_until", 1, "step 60/160", None, 300, 150)),
    # ranks pinned one per core; from rank 0's step-60 line 2 busy processes of another tenant on rank 1's core
    Scenario("b56_slow_pinhog_r1_rank0_steptime_2r", "train_fraud.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_fraud.py", env=dict(ENV56),
             action=("pin_hogx", 1, "[step  60]", 2)),
    Scenario("b56_slow_uc_anomaly_mode_after_spike_print0", "train_charlm.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_charlm.py", env=dict(ENV56)),
    Scenario("b56_st_local_scratch_full_r2_devnull_wrapper", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} --no-python ./run_rank.sh", setup=SCRATCH56,
             teardown="umount scratch/rank2", env=dict(ENV56)),
]


# ---- batch 60 (h211): cluster launcher output formats, each emulated as the real tool prints it, with one real failure
# per run: Slurm `srun -l` ('0: ' task labels, 'srun: error: gpu-node-002: task 3: Exited with exit code 1'), Slurm
# batch logs (sbatch --output file with slurmstepd's oom-kill and TIME LIMIT lines), pdsh host prefixes
# ('gpu-node-002: '), `kubectl logs --prefix` of a PyTorchJob's pods ('[pod/trainer-worker-1/pytorch] ', interleaved or
# one file per pod), Open MPI `mpirun --tag-output` ('[1,2]<stdout>:'), real torchrun `--role trainer --tee 3` on two
# agents, real Ray Train worker prefixes ('(RayTrainWorker pid=N)'); ids b60_* ----
ENV60 = {"OMP_NUM_THREADS": "1"}

# the test cluster's srun (a stand-in; prefixes and messages in the real tool's format)
SRUN60 = r"""
#!/usr/bin/env python3
'''srun as this test cluster's stand-in provides it: -n/--ntasks tasks over -N/--nodes nodes of the allocation
(B60_NODES, or SLURM_JOB_NODELIST), --ntasks-per-node, -l/--label prefixes every line with the task number ("0: "),
-K/--kill-on-bad-exit ends the step when a task fails. The node's task prolog exports RANK / LOCAL_RANK / WORLD_SIZE
from SLURM_PROCID / SLURM_LOCALID / SLURM_NTASKS; job_container/tmpfs gives each node its own TMPDIR. Task end
lines, OOM-kill detection (the task's memory cgroup oom_kill counter), KillWait and cancellation lines as
slurmstepd / srun print them.'''
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
label, ntasks, nnodes, per_node, kill_bad = False, 1, 1, 0, False
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a in ("-l", "--label"):
        label = True
    elif a in ("-K", "--kill-on-bad-exit"):
        kill_bad = True
    elif a in ("-n", "--ntasks"):
        ntasks = int(args.pop(0))
    elif a.startswith("--ntasks="):
        ntasks = int(a.split("=", 1)[1])
    elif a in ("-N", "--nodes"):
        nnodes = int(args.pop(0))
    elif a.startswith("--nodes="):
        nnodes = int(a.split("=", 1)[1])
    elif a.startswith("--ntasks-per-node="):
        per_node = int(a.split("=", 1)[1])
    elif a == "--ntasks-per-node":
        per_node = int(args.pop(0))
    elif a in ("-J", "--job-name", "-c", "--cpus-per-task", "-t", "--time"):
        args.pop(0)
if per_node:
    ntasks = per_node * nnodes
else:
    per_node = -(-ntasks // nnodes)
jobid = os.environ.get("SLURM_JOB_ID", "48213")
nodes = os.environ.get("B60_NODES", "gpu-node-001").split(",")[:nnodes]
kill_wait = int(os.environ.get("B60_KILLWAIT", "5"))
tmproot = os.environ.get("B60_TMPROOT", "/tmp")
lock = threading.Lock()


def ts():
    return datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")


def say(msg, err=True):
    with lock:
        s = sys.stderr if err else sys.stdout
        s.buffer.write((msg + "\n").encode())
        s.buffer.flush()


def pump(r, stream, out):
    pre = f"{r}: ".encode() if label else b""
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with lock:
            out.buffer.write(pre + line)
            out.buffer.flush()


def memcg(pid):
    try:
        for ln in open(f"/proc/{pid}/cgroup"):
            f = ln.strip().split(":", 2)
            if "memory" in f[1].split(","):
                return f[2]
    except OSError:
        return None


def oom_kills(path):
    try:
        for ln in open(f"/sys/fs/cgroup/memory{path}/memory.oom_control"):
            if ln.startswith("oom_kill "):
                return int(ln.split()[1])
    except (OSError, TypeError):
        pass
    return 0


procs, pumps, cgs, base = [], [], {}, {}
for r in range(ntasks):
    node = nodes[min(r // per_node, len(nodes) - 1)]
    tmp = os.path.join(tmproot, node, f"job{jobid}")
    os.makedirs(tmp, exist_ok=True)
    env = dict(os.environ, SLURM_PROCID=str(r), SLURM_LOCALID=str(r % per_node), SLURM_NTASKS=str(ntasks),
               SLURM_NNODES=str(nnodes), SLURM_NODEID=str(r // per_node), SLURMD_NODENAME=node, SLURM_JOB_ID=jobid,
               SLURM_STEP_ID="0", SLURM_STEP_NUM_TASKS=str(ntasks), RANK=str(r), LOCAL_RANK=str(r % per_node),
               WORLD_SIZE=str(ntasks), TMPDIR=tmp)
    for k in ("B60_NODES", "B60_KILLWAIT", "B60_TMPROOT"):
        env.pop(k, None)
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs.append((node, p))
    for st, out in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
        t = threading.Thread(target=pump, args=(r, st, out), daemon=True)
        t.start()
        pumps.append(t)
cancel = {"at": None, "why": ""}


def on_term(signum, frame):
    if cancel["at"]:
        return
    why = " DUE TO TIME LIMIT" if os.path.exists(os.environ.get("B60_STATE", "/nonexistent") + "/timelimit") else ""
    say(f"srun: Job step aborted: Waiting up to {kill_wait + 2} seconds for job step to finish.")
    time.sleep(0.3)
    say(f"slurmstepd: error: *** STEP {jobid}.0 ON {procs[0][0]} CANCELLED AT {ts()}{why} ***")
    cancel["at"], cancel["why"] = time.time(), why
    for _, q in procs:
        if q.poll() is None:
            q.send_signal(signal.SIGTERM)


signal.signal(signal.SIGTERM, on_term)
done, failed = {}, False
names = {9: "Killed", 15: "Terminated", 6: "Aborted", 11: "Segmentation fault", 7: "Bus error"}
while len(done) < ntasks:
    for r, (node, p) in enumerate(procs):
        if r in done:
            continue
        if p.poll() is None:
            cg = memcg(p.pid)
            if cg and cg != "/" and cg != cgs.get(r):  # (an exiting task is moved to the root: not its cgroup)
                cgs[r] = cg
                base.setdefault(cg, oom_kills(cg))
            continue
        done[r] = rc = p.returncode
        n_oom = 0
        if r in cgs and rc == -9:  # a SIGKILLed task: was it the cgroup's OOM killer? (its counter, as slurmstepd reads it)
            for _ in range(20):
                n_oom = oom_kills(cgs[r]) - base.get(cgs[r], 0)
                if n_oom:
                    break
                time.sleep(0.1)
            base[cgs[r]] = base.get(cgs[r], 0) + n_oom
        else:
            time.sleep(0.2)
        if n_oom:
            say(f"slurmstepd: error: Detected {n_oom} oom-kill event(s) in StepId={jobid}.0. Some of your processes "
                "may have been killed by the cgroup out-of-memory handler.")
            say(f"srun: error: {node}: task {r}: Out Of Memory")
        elif rc > 0:
            say(f"srun: error: {node}: task {r}: Exited with exit code {rc}")
        elif rc < 0:
            say(f"srun: error: {node}: task {r}: {names.get(-rc, f'signal {-rc}')}")
        if rc != 0 and kill_bad and not failed and not cancel["at"]:
            failed = True
            say(f"srun: Terminating StepId={jobid}.0")
            time.sleep(0.1)
            say(f"slurmstepd: error: *** STEP {jobid}.0 ON {node} CANCELLED AT {ts()} ***")
            cancel["at"] = time.time()
            for _, q in procs:
                if q.poll() is None:
                    q.send_signal(signal.SIGTERM)
    if cancel["at"] and time.time() - cancel["at"] > kill_wait:
        for _, q in procs:
            if q.poll() is None:
                q.kill()
    time.sleep(0.05)
for t in pumps:
    t.join(2)
if cancel["why"]:
    sys.exit(143)
sys.exit(max((abs(c) for c in done.values()), default=0))
"""

# the test cluster's sbatch (a stand-in; prefixes and messages in the real tool's format)
SBATCH60 = r"""
#!/usr/bin/env python3
'''sbatch --wait as this test cluster's stand-in provides it: "Submitted batch job N", the batch script run on the
allocation's first node with its output (#SBATCH --output, %j = job id) in a file, #SBATCH --time enforced as
slurmctld does (the job's steps and the batch step signalled, "*** JOB N ON node CANCELLED AT ... DUE TO TIME LIMIT
***" from the batch step's slurmstepd), exit code of the job.'''
import datetime
import os
import re
import signal
import subprocess
import sys
import time

args = sys.argv[1:]
script = [a for a in args if not a.startswith("-")][-1]
jobid = os.environ.get("B60_JOBID", "48213")
opts = {}
for line in open(script):
    m = re.match(r"#SBATCH\s+--([\w-]+)=(\S+)", line)
    if m:
        opts[m.group(1)] = m.group(2)
out = opts.get("output", "slurm-%j.out").replace("%j", jobid)
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
limit = 0
if "time" in opts:
    parts = [int(x) for x in opts["time"].split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    limit = parts[0] * 3600 + parts[1] * 60 + parts[2]
nnodes = int(opts.get("nodes", "1"))
nodes = [f"gpu-node-{int(os.environ.get('B60_FIRST_NODE', '3')) + k:03d}" for k in range(nnodes)]
state = f"/tmp/b60_sbatch_{jobid}_{os.getpid()}"
os.makedirs(state, exist_ok=True)
print(f"Submitted batch job {jobid}", flush=True)
env = dict(os.environ, SLURM_JOB_ID=jobid, SLURM_JOBID=jobid, SLURM_JOB_NODELIST=",".join(nodes),
           SLURM_JOB_NUM_NODES=str(nnodes), SLURMD_NODENAME=nodes[0], B60_NODES=",".join(nodes), B60_STATE=state,
           SLURM_SUBMIT_DIR=os.getcwd())
env.pop("B60_JOBID", None)
fh = open(out, "ab", buffering=0)
p = subprocess.Popen(["bash", script], env=env, stdout=fh, stderr=fh, start_new_session=True)
t0 = time.time()
timed_out = False
while p.poll() is None:
    if limit and not timed_out and time.time() - t0 > limit:
        timed_out = True
        open(f"{state}/timelimit", "w").close()
        now = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
        # the job's steps first (srun), then the batch step
        for pid in os.popen(f"pgrep -g {p.pid}").read().split():
            try:
                if open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1].endswith(b"/srun"):
                    os.kill(int(pid), signal.SIGTERM)
            except (OSError, IndexError):
                pass
        time.sleep(0.15)
        fh.write(f"slurmstepd: error: *** JOB {jobid} ON {nodes[0]} CANCELLED AT {now} DUE TO TIME LIMIT ***\n".encode())
        kill_at = time.time() + int(os.environ.get("B60_KILLWAIT", "5")) + 2
    if timed_out and time.time() > kill_at:
        os.killpg(p.pid, signal.SIGKILL)
    time.sleep(0.1)
rc = p.wait()
for f in os.listdir(state):
    os.remove(os.path.join(state, f))
os.rmdir(state)
sys.exit(0 if rc == 0 else 1)
"""

# the test cluster's pdsh (a stand-in; prefixes and messages in the real tool's format)
PDSH60 = r"""
#!/usr/bin/env python3
'''pdsh as this test cluster's stand-in provides it: -w host[,host] or gpu-node-00[1-2], -R ssh; the command run on
every host in a login shell of that host (the host's /etc/profile.d, here hosts/<host>/profile.sh, sourced first),
every output line prefixed "host: " as pdsh's default output does, and "pdsh@<local>: <host>: ssh exited with exit
code N" for a host whose command failed.'''
import os
import re
import subprocess
import sys
import threading

args = sys.argv[1:]
hosts = []
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a == "-w":
        spec = args.pop(0)
        m = re.match(r"(.*)\[(\d+)-(\d+)\](.*)", spec)
        if m:
            w = len(m.group(2))
            hosts = [f"{m.group(1)}{i:0{w}d}{m.group(4)}" for i in range(int(m.group(2)), int(m.group(3)) + 1)]
        else:
            hosts = spec.split(",")
    elif a in ("-R", "-f", "-l"):
        args.pop(0)
cmd = " ".join(args)
local = os.environ.get("B60_LOCALHOST", hosts[0])
lock = threading.Lock()


def pump(host, stream, out):
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with lock:
            out.buffer.write(f"{host}: ".encode() + line)
            out.buffer.flush()


procs, threads = [], []
for h in hosts:
    prof = os.path.join("hosts", h, "profile.sh")
    script = (f". {prof}; " if os.path.exists(prof) else "") + f"cd {os.getcwd()} && {cmd}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("B60_")}
    env["HOSTNAME"] = h
    p = subprocess.Popen(["bash", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    procs.append((h, p))
    for st, out in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
        t = threading.Thread(target=pump, args=(h, st, out), daemon=True)
        t.start()
        threads.append(t)
rcs = []
for h, p in procs:
    rc = p.wait()
    rcs.append(rc)
for t in threads:
    t.join(2)
for (h, p), rc in zip(procs, rcs):
    if rc != 0:
        with lock:
            sys.stderr.write(f"pdsh@{local}: {h}: ssh exited with exit code {rc if rc > 0 else 128 - rc}\n")
            sys.stderr.flush()
sys.exit(max(rcs, key=abs) and 1)
"""

# the test cluster's mpirun (a stand-in; prefixes and messages in the real tool's format)
MPIRUN60 = r"""
#!/usr/bin/env python3
'''mpirun (Open MPI 4.1) as this test cluster's stand-in provides it: -np N, -H host:slots,host:slots, --tag-output
("[1,R]<stdout>:" / "[1,R]<stderr>:" before every line, jobid 1), -x VAR (exported to the ranks), --bind-to and
--map-by accepted; each rank gets OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE and OMPI_MCA_orte_ess_num_procs;
the job is aborted with Open MPI's banners when a rank exits non-zero or by a signal.'''
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
np_, hosts, tag, exports = 1, [("localhost", 1)], False, []
while args and args[0].startswith("-"):
    a = args.pop(0)
    if a in ("-np", "-n"):
        np_ = int(args.pop(0))
    elif a == "-H":
        hosts = [(h.split(":")[0], int(h.split(":")[1]) if ":" in h else 1) for h in args.pop(0).split(",")]
    elif a == "--tag-output":
        tag = True
    elif a == "-x":
        exports.append(args.pop(0))
    elif a in ("--bind-to", "--map-by", "-mca", "--mca"):
        args.pop(0)
        if a in ("-mca", "--mca"):
            args.pop(0)
slots = [h for h, n in hosts for _ in range(n)]
lock = threading.Lock()


def pump(r, stream, out, name):
    pre = f"[1,{r}]<{name}>:".encode() if tag else b""
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with lock:
            out.buffer.write(pre + line)
            out.buffer.flush()


procs, threads = [], []
for r in range(np_):
    host = slots[r % len(slots)]
    local = [i for i in range(np_) if slots[i % len(slots)] == host]
    env = dict(os.environ, OMPI_COMM_WORLD_RANK=str(r), OMPI_COMM_WORLD_SIZE=str(np_),
               OMPI_COMM_WORLD_LOCAL_RANK=str(local.index(r)), OMPI_COMM_WORLD_LOCAL_SIZE=str(len(local)),
               OMPI_MCA_orte_ess_num_procs=str(np_), B60_MPI_HOST=host)
    for x in exports:  # -x NAME=value sets it, -x NAME passes the launcher's own
        if "=" in x:
            k, v = x.split("=", 1)
            env[k] = v
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    procs.append((host, p))
    for st, out, name in ((p.stdout, sys.stdout, "stdout"), (p.stderr, sys.stderr, "stderr")):
        t = threading.Thread(target=pump, args=(r, st, out, name), daemon=True)
        t.start()
        threads.append(t)
bar = "-" * 74
first = None
while True:
    alive = [p for _, p in procs if p.poll() is None]
    for r, (host, p) in enumerate(procs):
        if first is None and p.poll() not in (None, 0):
            first = (r, host, p)
            time.sleep(0.3)
            with lock:
                sys.stderr.write(f"{bar}\nPrimary job  terminated normally, but 1 process returned\n"
                                 f"a non-zero exit code. Per user-direction, the job has been aborted.\n{bar}\n")
                sys.stderr.flush()
            for _, q in procs:
                if q.poll() is None:
                    q.send_signal(signal.SIGTERM)
            kill_at = time.time() + 3
    if first and time.time() > kill_at:
        for _, q in procs:
            if q.poll() is None:
                q.kill()
    if not alive:
        break
    time.sleep(0.05)
for t in threads:
    t.join(2)
if first:
    r, host, p = first
    rc = p.returncode
    with lock:
        if rc < 0:
            name = {9: "Killed", 15: "Terminated", 6: "Aborted", 11: "Segmentation fault"}.get(-rc, "")
            sys.stderr.write(f"{bar}\nmpirun noticed that process rank {r} with PID {p.pid} on node {host} exited on "
                             f"signal {-rc} ({name}).\n{bar}\n")
        else:
            sys.stderr.write(f"{bar}\nmpirun detected that one or more processes exited with non-zero status, thus "
                             f"causing\nthe job to be terminated. The first process to do so was:\n\n"
                             f"  Process name: [[{os.getpid() % 60000},1],{r}]\n  Exit code:    {rc}\n{bar}\n")
        sys.stderr.flush()
    sys.exit(1 if rc > 0 else 128 - rc)
"""

# the test cluster's kjob (a stand-in; prefixes and messages in the real tool's format)
KJOB60 = r"""
#!/usr/bin/env python3
'''kjob: the team's stand-in for `kubectl apply -f pytorchjob.yaml` on this single-node test cluster, followed by
either `kubectl logs -f -l training.kubeflow.org/job-name=JOB --prefix --all-containers` (interleaved, the default) or,
with --log-dir DIR, `kubectl get pods -w` on the terminal and one `kubectl logs --prefix pod/P > DIR/P.log` file per pod.

    kjob --job NAME --workers N [--log-dir DIR] -- COMMAND ...

Pods NAME-master-0 (RANK 0) and NAME-worker-0 .. NAME-worker-{N-1} (RANK 1..N), container "pytorch", with the
environment the training operator gives them (MASTER_ADDR = the master's service, MASTER_PORT, WORLD_SIZE, RANK,
HOSTNAME = pod name). When a pod fails the job fails and the operator deletes the running pods (cleanPodPolicy:
Running, SIGTERM then SIGKILL after the 30 s grace period, here 5 s).'''
import os
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
job, workers, log_dir = "trainer", 1, ""
while args and args[0] != "--":
    a = args.pop(0)
    if a == "--job":
        job = args.pop(0)
    elif a == "--workers":
        workers = int(args.pop(0))
    elif a == "--log-dir":
        log_dir = args.pop(0)
args.pop(0)
lock = threading.Lock()
t0 = time.time()


def out(line):
    with lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def pump(pod, stream, fh):
    pre = f"[pod/{pod}/pytorch] ".encode()
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        if fh:
            fh.write(pre + line)
        else:
            out(pre + line)


def status(pod, st, rc=0):
    if log_dir:
        age = int(time.time() - t0)
        ready = "1/1" if st == "Running" else "0/1"
        out(f"{pod:<20} {ready:<7} {st:<11} 0          {age}s\n".encode())


pods = [f"{job}-master-0"] + [f"{job}-worker-{k}" for k in range(workers)]
if log_dir:
    os.makedirs(log_dir, exist_ok=True)
    out(b"NAME                 READY   STATUS      RESTARTS   AGE\n")
procs, threads = [], []
for k, pod in enumerate(pods):
    env = dict(os.environ, RANK=str(k), WORLD_SIZE=str(len(pods)), HOSTNAME=pod, PYTHONUNBUFFERED="1",
               MASTER_ADDR=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    p = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    fh = open(os.path.join(log_dir, f"{pod}.log"), "ab", buffering=0) if log_dir else None
    procs.append((pod, p))
    t = threading.Thread(target=pump, args=(pod, p.stdout, fh), daemon=True)
    t.start()
    threads.append(t)
    status(pod, "Running")
done, failed, deleted_at = set(), False, None
while len(done) < len(pods):
    for pod, p in procs:
        if pod in done or p.poll() is None:
            continue
        done.add(pod)
        rc = p.returncode
        code = rc if rc >= 0 else 128 - rc
        if rc == 0:
            status(pod, "Completed")
            continue
        status(pod, "OOMKilled" if rc == -9 and os.environ.get("KJOB_OOM") else "Error", code)
        if not failed:
            failed = True
            running = [(q, pp) for q, pp in procs if pp.poll() is None]
            for q, pp in running:
                status(q, "Terminating")
                pp.send_signal(signal.SIGTERM)
            deleted_at = time.time()
    if deleted_at and time.time() - deleted_at > 5:
        for _, pp in procs:
            if pp.poll() is None:
                pp.kill()
    time.sleep(0.05)
for t in threads:
    t.join(2)
sys.exit(1 if failed else 0)
"""


def _tools60(*names: str) -> str:
    """Setup lines writing the cluster tools of this batch into bin/ (executable)."""
    return "".join(_tool39(n, globals()[f"{n.upper()}60"]) for n in names)


def _env60(sid: str, **kw: str) -> dict[str, str]:
    return {**ENV60, "PATH": _path39(sid), **kw}


# utterances per rank; the intent "cancel_order" was added to the annotation guide last week and only shard 3 (the
# newest batch from the vendor) has it
INTENTS60 = r"""mkdir -p data && python - <<'EOF2'
import json, random
rng = random.Random(60)
words = {"play_music": "play song music track album", "set_alarm": "wake alarm set morning clock",
         "weather": "weather rain sunny forecast today", "book_table": "book table restaurant dinner two",
         "navigate": "route drive directions home nearest", "call_contact": "call phone mom dial ring",
         "cancel_order": "cancel order refund package return"}
for r in range(4):
    names = list(words) if r == 3 else list(words)[:-1]
    with open(f"data/intents-{r}.jsonl", "w") as f:
        for i in range(1600):
            it = names[rng.randrange(len(names))] if not (r == 3 and i < 1100) else rng.choice(list(words)[:-1])
            if r == 3 and 1100 <= i and rng.random() < 0.15:
                it = "cancel_order"
            f.write(json.dumps({"text": " ".join(rng.choice(words[it].split()) for _ in range(5)), "intent": it}) + "\n")
EOF2"""
# land-cover tiles per region (uint8, 4 bands); region 1 was exported at full resolution (512 px), the others at 128
TILES60 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(60)
for r in range(3):
    px = 512 if r == 1 else 128
    n = 240 if r == 1 else 600
    np.savez(f"data/region-{r}.npz", tiles=rng.integers(0, 256, (n, 4, px, px), dtype=np.uint8),
             masks=rng.integers(0, 5, (n, px, px), dtype=np.uint8))
EOF2"""
SEG60_SBATCH = r"""cat > train_seg.sbatch <<'EOF2'
#!/bin/bash
#SBATCH --job-name=landcover-seg
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=3
#SBATCH --mem=2000M
#SBATCH --time=01:00:00
#SBATCH --output=logs/slurm-%j.out
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, started $(date -Is)"
export MASTER_ADDR=127.0.0.1
export MASTER_PORT=$ZOO_PORT
srun -l --ntasks 3 python train_seg.py
echo "srun exited with $?"
EOF2"""
LM60_SBATCH = r"""cat > train_lm.sbatch <<'EOF2'
#!/bin/bash
#SBATCH --job-name=tinylm
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:00:45
#SBATCH --output=logs/slurm-%j.out
echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, started $(date -Is)"
export MASTER_ADDR=127.0.0.1
export MASTER_PORT=$ZOO_PORT
srun -l --nodes 2 --ntasks-per-node 2 python train_lm.py
EOF2"""
# each node's login profile (/etc/profile.d of its image); gpu-node-002 was re-imaged from the InfiniBand partition's
# image, whose profile names the IB interface for NCCL and gloo
HOSTS60 = r"""mkdir -p hosts/gpu-node-001 hosts/gpu-node-002
cat > hosts/gpu-node-001/profile.sh <<'EOF2'
export OMP_NUM_THREADS=1
EOF2
cat > hosts/gpu-node-002/profile.sh <<'EOF2'
export OMP_NUM_THREADS=1
# /etc/profile.d/nccl.sh of the ib-a100 image
export NCCL_SOCKET_IFNAME=ib0
export GLOO_SOCKET_IFNAME=ib0
EOF2"""
# dense CTR features per partition; partition 2 was re-exported after the feature-store schema change (132 columns:
# four new user features appended), the others are last week's export
CTR60 = r"""mkdir -p features && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(60)
for r in range(4):
    d = 132 if r == 2 else 128
    x = rng.standard_normal((6000, d)).astype(np.float32)
    y = (x[:, :8].sum(1) + rng.standard_normal(6000) > 0).astype(np.float32)
    np.savez(f"features/part-{r:05d}.npz", x=x, y=y, export_id=("2026-12-06-v2" if r == 2 else "2026-11-29-v1"))
EOF2"""
KILL_RANK60 = ("for p in $(pgrep -f {script}); do tr '\\0' '\\n' < /proc/$p/environ | grep -qx '{var}={val}' && "
               "kill -{sig} $p && echo \"  {what}: pid $p ({var}={val}) SIG{sig}\" >&2; done")
ROLE60 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
          "--role trainer --tee 3 train_tagger.py")
SCENARIOS += [
    Scenario("b60_uc_srun_l_twonode_labelmap_keyerror_r3", "train_intent.py",
             "srun -l -K --nodes 2 --ntasks-per-node 2 python train_intent.py",
             setup=_tools60("srun") + INTENTS60,
             env=_env60("b60_uc_srun_l_twonode_labelmap_keyerror_r3", MASTER_ADDR="127.0.0.1", MASTER_PORT="{port}",
                        SLURM_JOB_ID="771204", B60_NODES="gpu-node-001,gpu-node-002",
                        B60_TMPROOT="/tmp/local_scratch")),
    # the job's memory cgroup (--mem=2000M, ConstrainRAMSpace) is the step's: applied to sbatch before it starts
    Scenario("b60_oom_sbatch_srun_tilecache_r1", "train_seg.py", "sbatch --wait train_seg.sbatch",
             setup=_tools60("srun", "sbatch") + TILES60 + "\n" + SEG60_SBATCH,
             env=_env60("b60_oom_sbatch_srun_tilecache_r1", B60_JOBID="771318", B60_FIRST_NODE="3",
                        B60_TMPROOT="/tmp/local_scratch"),
             job_mem_mib=2000),
    Scenario("b60_hang_sbatch_timelimit_nodelocal_ready_flag", "train_lm.py", "sbatch --wait train_lm.sbatch",
             setup=_tools60("srun", "sbatch") + LM60_SBATCH,
             env=_env60("b60_hang_sbatch_timelimit_nodelocal_ready_flag", B60_JOBID="771402", B60_FIRST_NODE="3",
                        B60_TMPROOT="/tmp/local_scratch")),
    Scenario("b60_cfg_pdsh_torchrun_gloo_ifname_node1", "train_pairs.py",
             "pdsh -R ssh -w gpu-node-00[1-2] 'torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d "
             "--rdzv-endpoint 127.0.0.1:{port} --rdzv-id pairs60 train_pairs.py'",
             setup=_tools60("pdsh") + HOSTS60,
             env=_env60("b60_cfg_pdsh_torchrun_gloo_ifname_node1", B60_LOCALHOST="login-01")),
    Scenario("b60_data_kjob_prefix_schema_drift_w1", "train_ctr.py",
             "kjob --job trainer --workers 3 -- python train_ctr.py",
             setup=_tools60("kjob") + CTR60,
             env=_env60("b60_data_kjob_prefix_schema_drift_w1", MASTER_PORT="{port}")),
    # trainer-worker-2 (RANK 3) gets SIGTERM from outside once it has logged step 60 (its pod deleted: a node drain)
    Scenario("b60_infra_kjob_perpod_sigterm_w2", "train_twotower.py",
             "kjob --job trainer --workers 3 --log-dir logs -- python train_twotower.py",
             setup=_tools60("kjob"),
             env=_env60("b60_infra_kjob_perpod_sigterm_w2", MASTER_PORT="{port}"),
             action=("shell4", "trainer-worker-2 step 60 ",
                     KILL_RANK60.format(script="train_twotower.py", var="RANK", val=3, sig="TERM", what="drain"))),
    # rank 2 (gpu-node-002's first slot) SIGKILLed from outside after its step-30 line
    Scenario("b60_infra_mpirun_tag_sigkill_r2", "train_vae.py",
             "mpirun -np 4 -H gpu-node-001:2,gpu-node-002:2 --tag-output --bind-to none -x MASTER_ADDR=127.0.0.1 "
             "-x MASTER_PORT={port} python train_vae.py",
             setup=_tools60("mpirun"), env=_env60("b60_infra_mpirun_tag_sigkill_r2"),
             action=("shell", "[1,2]<stdout>:rank 2 step 30 ",
                     KILL_RANK60.format(script="train_vae.py", var="OMPI_COMM_WORLD_RANK", val=2, sig="KILL",
                                        what="kill"))),
    Scenario("b60_hang_torchrun_role_tee_twonode_earlystop_r3", "train_tagger.py", ROLE60.format(k=0, port="{port}"),
             cmd2=ROLE60.format(k=1, port="{port}"), env=dict(ENV60)),
    # rank 1 stopped (SIGSTOP, never continued) after its step-30 line: a process that stops being scheduled
    Scenario("b60_infra_srun_l_sigstop_r1", "train_ner.py", "srun -l -K --ntasks 3 python train_ner.py",
             setup=_tools60("srun"),
             env=_env60("b60_infra_srun_l_sigstop_r1", MASTER_ADDR="127.0.0.1", MASTER_PORT="{port}",
                        SLURM_JOB_ID="771533", B60_NODES="gpu-node-001", B60_TMPROOT="/tmp/local_scratch"),
             action=("kill", 1, signal.SIGSTOP, "1: [rank 1] step 30 ")),
    Scenario("b60_uc_raytrain_ddp_attr_r0", "train_cnn.py", "python train_cnn.py", env=dict(ENV60)),
]

# ---- batch 59 (h210): network faults on two-node stand-ins (node 0 = this host, node 1 = the network namespace b59_n1
# joined by a veth pair, b59h0 10.159.0.1 on node 0 and eth1 10.159.0.2 on node 1): node 1's profile giving gloo NCCL's
# interface exclusion list; node 1's /etc/hosts holding a stale address for the head node's name; node 1's host
# firewall reloaded mid-run with only the rendezvous port open (DROP); node 0's firewall answering the data ports with
# resets mid-run; light (fail_slow) and heavy frame loss on node 1's link from mid-run (nft random drop: no netem here);
# node 1's switch port left at MTU 1500 between jumbo-frame NICs (large frames dropped, small ones pass); node 1's link
# down for a few seconds mid-run (it recovered: fail_slow);
# the rendezvous store's port on node 0 closed mid-run (c10d: RST; static: DROP while the job builds a group); ids b59_*.
# Each scenario's port is 29600 + 4k (k its place in this batch; the recorder's ZOO_PORT_OFFSET is set per run so), and
# the firewall rules that name the store's port carry it literally ----
ENV59 = {"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "b59h0"}
ENV59_N1 = {"GLOO_SOCKET_IFNAME": "eth1"}
N1_59 = "ip netns exec b59_n1"
NET59 = ("ip netns del b59_n1 2>/dev/null; ip netns del b59_sw 2>/dev/null; ip link del b59h0 2>/dev/null; "
         "ip link del b59mgmt 2>/dev/null; nft delete table inet b59fw 2>/dev/null; "
         "ip netns add b59_n1 && ip link add b59h0 type veth peer name b59p && ip link set b59p netns b59_n1 && "
         f"{N1_59} ip link set b59p name eth1 && ip addr add 10.159.0.1/24 dev b59h0 && ip link set b59h0 up && "
         f"{N1_59} ip addr add 10.159.0.2/24 dev eth1 && {N1_59} ip link set eth1 up && {N1_59} ip link set lo up")
NET59_DOWN = ("ip netns del b59_n1 2>/dev/null; ip netns del b59_sw 2>/dev/null; ip link del b59h0 2>/dev/null; "
              "ip link del b59mgmt 2>/dev/null; nft delete table inet b59fw 2>/dev/null; rm -rf /etc/netns/b59_n1; true")
STATIC59 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr {addr} --master-port {{port}} "
            "--rdzv-conf timeout=25{tee} {file}")


def P59(k: int) -> int:
    """Batch 59: the k-th scenario's port (the recorder's ZOO_PORT_OFFSET is chosen per run to give it)."""
    return 29600 + 4 * k


def _two59(sid: str, file: str, addr: str = "10.159.0.1", tee: str = "", **kw) -> Scenario:
    kw.setdefault("env", dict(ENV59))
    kw.setdefault("env2", dict(ENV59_N1))
    kw.setdefault("setup", NET59)
    return Scenario(sid, file, STATIC59.format(k=0, addr=addr, tee=tee, file=file),
                    cmd2=STATIC59.format(k=1, addr=addr, tee=tee, file=file), netns2="b59_n1", teardown=NET59_DOWN, **kw)


# node 1's profile (its image's /etc/profile.d, written for NCCL jobs) exports NCCL_SOCKET_IFNAME=^lo,docker0 and the same
# exclusion list as GLOO_SOCKET_IFNAME; node 0's profile gives gloo its data NIC
# the launch line names the head node trn-head-0; node 0 resolves it to its own data address, node 1's /etc/hosts (the
# node image's, written when the previous allocation was provisioned) still maps it to 10.159.0.7, which nobody holds now
HOSTS59 = NET59 + (" && printf '127.0.0.1 localhost\\n10.159.0.1 trn-head-0\\n' > hosts.node0 && mkdir -p /etc/netns/b59_n1"
                   " && printf '127.0.0.1 localhost\\n10.159.0.7 trn-head-0\\n' > /etc/netns/b59_n1/hosts")
# node 1's host firewall reloaded by config management: its new policy opens only the rendezvous port; TCP between two
# ephemeral ports (every gloo pair connection) on the data NIC is dropped both ways; the store connections stay up
FW_DROP59 = (f"{N1_59} iptables -A INPUT -i eth1 -p tcp --sport 32768:60999 --dport 32768:60999 -j DROP && "
             f"{N1_59} iptables -A OUTPUT -o eth1 -p tcp --sport 32768:60999 --dport 32768:60999 -j DROP && "
             "echo '  firewall: node 1 drops tcp ephemeral<->ephemeral on eth1' >&2")
# node 0's firewall (an nft table of its own) answers TCP between ephemeral ports on its data NIC with resets
FW_RESET59 = ("nft add table inet b59fw && nft add chain inet b59fw in '{ type filter hook input priority 0; }' && "
              "nft add chain inet b59fw out '{ type filter hook output priority 0; }' && "
              "nft add rule inet b59fw in iifname b59h0 tcp sport 32768-60999 tcp dport 32768-60999 reject with tcp reset && "
              "nft add rule inet b59fw out oifname b59h0 tcp sport 32768-60999 tcp dport 32768-60999 "
              "tcp flags '& rst == 0' reject with tcp reset && echo '  firewall: node 0 resets ephemeral<->ephemeral' >&2")
# node 1's switch port left at MTU 1500 while both NICs use jumbo frames (9000): a switch namespace b59_sw bridges node
# 0's link (swp0, 9000) and node 1's (swp1, 1500); segmentation offload off on both NICs (gso_max_segs 1) so that every
# frame on the wire is MTU-sized as a physical NIC sends it
MTU59 = ("ip netns del b59_n1 2>/dev/null; ip netns del b59_sw 2>/dev/null; ip link del b59h0 2>/dev/null; "
         "ip netns add b59_n1 && ip netns add b59_sw && ip link add b59h0 type veth peer name swp0 && "
         "ip link set swp0 netns b59_sw && ip netns exec b59_sw ip link add swp1 type veth peer name b59p && "
         "ip netns exec b59_sw ip link set b59p netns b59_n1 && " f"{N1_59} ip link set b59p name eth1 && "
         "ip netns exec b59_sw ip link add br0 type bridge && ip netns exec b59_sw ip link set swp0 master br0 && "
         "ip netns exec b59_sw ip link set swp1 master br0 && ip link set b59h0 mtu 9000 && "
         "ip netns exec b59_sw ip link set swp0 mtu 9000 && ip netns exec b59_sw ip link set swp1 mtu 1500 && "
         f"{N1_59} ip link set eth1 mtu 9000 && ip link set dev b59h0 gso_max_segs 1 && "
         f"{N1_59} ip link set dev eth1 gso_max_segs 1 && ip addr add 10.159.0.1/24 dev b59h0 && ip link set b59h0 up && "
         "ip netns exec b59_sw ip link set swp0 up && ip netns exec b59_sw ip link set swp1 up && "
         "ip netns exec b59_sw ip link set br0 up && " f"{N1_59} ip addr add 10.159.0.2/24 dev eth1 && "
         f"{N1_59} ip link set eth1 up && {N1_59} ip link set lo up && mkdir -p configs && "
         "echo '{\"classes\": 10, \"lr\": 0.05, \"steps\": 300}' > configs/landcover.json")
C10D59 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 10.159.0.1:{port} "
          "--rdzv-id kws-1207 --rdzv-conf join_timeout=40,read_timeout=10{host} --local-addr {addr} train_kws.py")


def _store_fw59(k: int, verdict: str) -> str:
    """Node 0's firewall (its own nft table) closing the rendezvous store's port (P59(k)) to the data NIC."""
    return ("nft add table inet b59fw && nft add chain inet b59fw in '{ type filter hook input priority 0; }' && "
            f"nft add rule inet b59fw in iifname b59h0 tcp dport {P59(k)} {verdict} && "
            f"echo '  firewall: node 0 port {P59(k)} {verdict}' >&2")


# a failing optic / cable on node 1's link: a share of the frames through node 1's eth1 is lost, each way. This host's
# kernel has no netem qdisc (tc qdisc ... netem: 'Specified qdisc kind is unknown'), so the loss is an nft rule of its own
# in node 1's namespace that drops that share of the frames at random (numgen random), as netem's loss would


def _loss59(pct: int) -> str:
    t = f"{N1_59} nft"
    return (f"{t} add table inet b59loss && {t} add chain inet b59loss out '{{ type filter hook output priority 0; }}' && "
            f"{t} add chain inet b59loss in '{{ type filter hook input priority 0; }}' && "
            f"{t} add rule inet b59loss out oifname eth1 numgen random mod 100 '<' {pct} drop && "
            f"{t} add rule inet b59loss in iifname eth1 numgen random mod 100 '<' {pct} drop && "
            f"echo '  loss: node 1 eth1 {pct}% each way' >&2")


# in this order k = 0 ... 9 (the port of each is P59(k))
SCENARIOS += [
    _two59("b59_cfg_gloo_ifname_nccl_syntax_node1_twonode_n1", "train_kws_crnn.py",
           env2={"GLOO_SOCKET_IFNAME": "^lo,docker0", "NCCL_SOCKET_IFNAME": "^lo,docker0"}),
    _two59("b59_net_hosts_stale_head_node1_twonode_n1", "train_sentiment.py", addr="trn-head-0", setup=HOSTS59,
           hosts1="hosts.node0"),
    _two59("b59_hang_fw_drop_data_ports_node1_twonode_n1", "train_churn.py",
           action=("shell", "node=1 rank=3 step=200/600", FW_DROP59)),
    _two59("b59_net_fw_reset_data_ports_node0_twonode_n0", "train_htr.py", tee=" --tee 3",
           action=("shell", "n0:1 ep 0 it 100/150", FW_RESET59)),
    # from node 1's rank 3 step-80 line node 1's link loses 5 % of the frames it sends and receives
    _two59("b59_slow_net_loss_node1_twonode_n1", "train_intent.py",
           action=("shell", "node 1 rank 3 | step 80/", _loss59(5))),
    # from node 1's rank 3 step-120 record node 1's link loses most frames (60 % each way)
    _two59("b59_hang_net_loss_heavy_node1_twonode_n1", "train_clicks.py",
           action=("shell", '"node": 1, "rank": 3, "step": 120,', _loss59(60))),
    _two59("b59_hang_mtu_mismatch_node1_twonode_n1", "train_landcover.py", setup=MTU59),
    # at node 1's rank 3 step-160 line node 1's link goes down for 4 s and comes back
    _two59("b59_net_link_blip_node1_twonode_n1", "train_basket.py", tee=" --tee 3",
           action=("shell", "node1/rank3 INFO step 160/400", f"{N1_59} ip link set eth1 down && "
                   "echo '  link down: node 1 eth1' >&2 && sleep 4 && " f"{N1_59} ip link set eth1 up && "
                   "echo '  link up: node 1 eth1' >&2")),
    # c10d rendezvous hosted by node 0's agent; at node 1's rank 3 step-200 line node 0's firewall resets every TCP
    # segment arriving for the store's port on its data NIC
    # node 0's launch line says is_host=1 (the head node: its agent hosts the store; it would not match its own data
    # address by hostname here); each node gives its data address as --local-addr (the workers' store address)
    Scenario("b59_net_store_port_closed_c10d_twonode_n0", "train_kws.py",
             C10D59.format(port="{port}", host=",is_host=1", addr="10.159.0.1"),
             cmd2=C10D59.format(port="{port}", host="", addr="10.159.0.2"), netns2="b59_n1",
             setup=NET59, teardown=NET59_DOWN, env=dict(ENV59), env2=dict(ENV59_N1),
             action=("shell", "[1/3] step  200/700", _store_fw59(8, "reject with tcp reset"))),
    # at node 1's rank 3 step-60 line node 0's firewall drops what arrives for the store's port on its data NIC; at
    # step 100 the job builds its per-node evaluation groups (new_group: through the store)
    _two59("b59_hang_fw_drop_store_port_newgroup_node0_twonode_n0", "train_biencoder.py",
           action=("shell", "rank 3 (node 1) step 60 ", _store_fw59(9, "drop"))),
]

# ---- batch 62 (h213): checkpoint resume failures: a head resized for a new label set against last week's
# checkpoint, one rank's resume shard cut short by a killed save, a DCP checkpoint loaded with another FFN width, a DCP
# checkpoint staged to scratch by a glob that skips its .metadata, an optimizer whose no-decay group changed, strict=False
# hiding renamed normaliser buffers until the loss is no longer finite, a checkpoint rotation that deletes the step
# 'latest' names (lexicographic sort), weights_only=True refusing a numpy scalar of an old checkpoint, a resumed job's
# first save on a full checkpoint volume, a hand-written ZeRO-1 optimizer's per-rank shards saved with 4 ranks and
# loaded with 3; ids b62_* ----
ENV62 = {"OMP_NUM_THREADS": "1"}
# last week's checkpoint of the intent model: 20 intents (the taxonomy now has 23)
INTENT62 = r"""mkdir -p ckpt && python - <<'EOF2'
import torch, torch.nn as nn
torch.manual_seed(62)
class IntentModel(nn.Module):
    def __init__(self, vocab, dim, num_labels):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.classifier = nn.Linear(dim, num_labels)
    def forward(self, ids):
        return self.classifier(self.encoder(self.embed(ids)))
m = IntentModel(8000, 128, 20)
o = torch.optim.AdamW(m.parameters(), lr=3e-4)
m(torch.randint(0, 8000, (4, 24))).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": 2000}, "ckpt/intent-step2000.pt")
EOF2"""
# every rank's resume shard of step 600; the save of rank 2's shard was killed (preemption) after 40 % of its bytes
KWS62 = r"""mkdir -p ckpt/step_600 && python - <<'EOF2'
import torch, torch.nn as nn
for r in range(3):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.ReLU(), nn.Conv1d(64, 64, 5, padding=2), nn.ReLU(),
                      nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(64, 12))
    o = torch.optim.Adam(m.parameters(), lr=1e-3)
    m(torch.randn(2, 40, 98)).sum().backward(); o.step()
    torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "rng": torch.get_rng_state(), "step": 600,
                "sampler_pos": 600 * 32}, f"ckpt/step_600/shard_r{r}.pt")
p = "ckpt/step_600/shard_r2.pt"
raw = open(p, "rb").read()
open(p, "wb").write(raw[: int(len(raw) * 0.4)])
open("ckpt/LATEST", "w").write("step_600\n")
EOF2"""
# a DCP checkpoint of step 1200 saved with ffn_dim 512; the config was since edited to ffn_dim 1024
LM62 = r"""mkdir -p configs && python - <<'EOF2'
import json, torch, torch.nn as nn
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict
class LM(nn.Module):
    def __init__(self, vocab, d, ffn, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(d, 4, ffn, dropout=0.0, batch_first=True) for _ in range(layers))
        self.out = nn.Linear(d, vocab)
    def forward(self, x):
        h = self.tok(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h)
m = LM(2000, 128, 512, 2)
o = torch.optim.AdamW(m.parameters(), lr=3e-4)
m(torch.randint(0, 2000, (2, 16))).sum().backward(); o.step()
msd, osd = get_state_dict(m, o)
dcp.save({"model": msd, "optim": osd, "step": 1200}, checkpoint_id="checkpoints/lm-step1200")
json.dump({"vocab": 2000, "d_model": 128, "ffn_dim": 1024, "layers": 2, "lr": 3e-4,
           "resume_from": "checkpoints/lm-step1200"}, open("configs/lm.json", "w"), indent=1)
EOF2"""
# a DCP checkpoint of step 4000 on the shared volume (.metadata and one .distcp file)
REC62 = r"""mkdir -p shared/ckpt scratch && python - <<'EOF2'
import torch, torch.nn as nn
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict
m = nn.Sequential(nn.Embedding(20000, 32), nn.Flatten(), nn.Linear(32 * 8, 256), nn.ReLU(), nn.Linear(256, 1))
o = torch.optim.Adam(m.parameters(), lr=1e-3)
m(torch.randint(0, 20000, (2, 8))).sum().backward(); o.step()
msd, osd = get_state_dict(m, o)
dcp.save({"model": msd, "optim": osd, "step": 4000}, checkpoint_id="shared/ckpt/step_4000")
open("shared/ckpt/latest", "w").write("step_4000\n")
EOF2
ls -A shared/ckpt/step_4000"""
# ckpt/last.pt of step 1500 written by last week's code: embeddings were still in the decay group
CLS62 = r"""mkdir -p ckpt && python - <<'EOF2'
import torch, torch.nn as nn
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5000, 64)
        self.pos = nn.Embedding(64, 64)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True), 2)
        self.head = nn.Linear(64, 6)
    def forward(self, x):
        h = self.embed(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.enc(h).mean(1))
m = Classifier()
decay, no_decay = [], []
for name, p in m.named_parameters():
    (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
o = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=2e-4)
m(torch.randint(0, 5000, (2, 48))).sum().backward(); o.step()
torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": 1500}, "ckpt/last.pt")
EOF2"""
# ckpt/flows_last.pt of step 3000 from before the refactor: the normaliser module was `normalizer`, no aux head
FLOW62 = r"""mkdir -p ckpt && python - <<'EOF2'
import torch, torch.nn as nn
class FeatureNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.register_buffer("mean", torch.zeros(d))
        self.register_buffer("std", torch.ones(d))
class Old(nn.Module):
    def __init__(self, d=12):
        super().__init__()
        self.normalizer = FeatureNorm(d)
        self.body = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.out = nn.Linear(64, 1)
m = Old()
scale = torch.tensor([1e6, 1e5, 3e4, 2e3, 5e2, 1e2, 60.0, 30.0, 10.0, 5.0, 1.0, 1.0])
x = torch.rand(20000, 12) * scale
m.normalizer.mean.copy_(x.mean(0)); m.normalizer.std.copy_(x.std(0))
torch.save({"model": m.state_dict(), "step": 3000}, "ckpt/flows_last.pt")
EOF2"""
# the checkpoints of the previous segments (steps 800 and 900), latest -> step_900
TAG62 = r"""mkdir -p checkpoints/step_800 checkpoints/step_900 && python - <<'EOF2'
import torch, torch.nn as nn
m = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 40))
o = torch.optim.Adam(m.parameters(), lr=1e-3)
m(torch.randn(2, 512)).sum().backward(); o.step()
for s in (800, 900):
    torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": s}, f"checkpoints/step_{s}/state.pt")
open("checkpoints/latest", "w").write("step_900\n")
EOF2"""
# last quarter's best checkpoint: the best validation AUC was stored as the numpy scalar sklearn returned
CHURN62 = r"""mkdir -p runs/churn && python - <<'EOF2'
import numpy as np, torch, torch.nn as nn
m = nn.Sequential(nn.Linear(30, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))
o = torch.optim.Adam(m.parameters(), lr=1e-3)
m(torch.randn(2, 30)).sum().backward(); o.step()
torch.save({"state_dict": m.state_dict(), "optimizer": o.state_dict(), "epoch": 14,
            "best_auc": np.float64(0.8713)}, "runs/churn/checkpoint_best.pth")
EOF2"""
# the team's checkpoint volume (14 MiB quota, a tmpfs here) holding the two newest checkpoints (~5.8 MB each)
VOL62 = (r"""mkdir -p /mnt/b62_ckpt && (mountpoint -q /mnt/b62_ckpt && umount /mnt/b62_ckpt || true) && """
         r"""mount -t tmpfs -o size=14m tmpfs /mnt/b62_ckpt && mkdir -p /mnt/b62_ckpt/tagger && python - <<'EOF2'
import torch, torch.nn as nn
class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6000, 64)
        self.gru = nn.GRU(64, 96, batch_first=True, bidirectional=True)
        self.out = nn.Linear(192, 17)
    def forward(self, x):
        return self.out(self.gru(self.emb(x))[0])
m = Tagger()
o = torch.optim.Adam(m.parameters(), lr=1e-3)
m(torch.randint(0, 6000, (2, 40))).sum().backward(); o.step()
for s in (1100, 1200):
    torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), "step": s}, f"/mnt/b62_ckpt/tagger/ckpt_{s}.pt")
EOF2
df -h /mnt/b62_ckpt | tail -1""")
# step 2000 of the same job when it ran on 4 ranks: model.pt and one optimizer slice per rank (ceil(82689 / 4))
ZERO62 = r"""mkdir -p ckpt/step_2000 && python - <<'EOF2'
import math, torch, torch.nn as nn
torch.manual_seed(0)
m = nn.Sequential(nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1))
n = sum(p.numel() for p in m.parameters())
shard = math.ceil(n / 4)
torch.save({"model": m.state_dict(), "step": 2000}, "ckpt/step_2000/model.pt")
for r in range(4):
    torch.save({"exp_avg": torch.randn(shard) * 1e-3, "exp_avg_sq": torch.rand(shard) * 1e-6, "t": 2000},
               f"ckpt/step_2000/optim_rank{r}.pt")
open("ckpt/latest", "w").write("step_2000\n")
EOF2"""
SCENARIOS += [
    Scenario("b62_cfg_resume_num_labels_head_mismatch", "finetune_intents.py",
             "torchrun --nproc-per-node 2 --master-port {port} finetune_intents.py --num-labels 23 "
             "--resume ckpt/intent-step2000.pt", setup=INTENT62, env=dict(ENV62)),
    Scenario("b62_st_rank_shard_truncated_killed_save_r2", "train_kws.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --tee 3 train_kws.py",
             setup=KWS62, env=dict(ENV62)),
    Scenario("b62_cfg_dcp_resume_ffn_dim_changed", "train_lm.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_lm.py", setup=LM62, env=dict(ENV62)),
    Scenario("b62_uc_dcp_stage_glob_skips_metadata", "train_rec.py",
             "python -m torch.distributed.run --nproc-per-node 3 --master-port {port} train_rec.py",
             setup=REC62, env=dict(ENV62)),
    Scenario("b62_uc_optim_no_decay_groups_resume_4r", "train_cls.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_cls.py", setup=CLS62, env=dict(ENV62)),
    Scenario("b62_uc_strict_false_norm_buffers_nan_spawn", "train_flows.py", "python train_flows.py",
             setup=FLOW62, env={**ENV62, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"}),
    # two segments of the chain run back to back (the scheduler's requeue after the wall-clock limit)
    Scenario("b62_uc_latest_tag_lexsort_rotation_requeue", "train_tags.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_tags.py --until 1000 && "
             "torchrun --nproc-per-node 2 --master-port {port} train_tags.py --until 1100",
             setup=TAG62, env=dict(ENV62)),
    Scenario("b62_cfg_weights_only_numpy_best_metric", "main_churn.py",
             "torchrun --nnodes 1 --nproc-per-node 3 --master-port {port} main_churn.py", setup=CHURN62,
             env=dict(ENV62)),
    Scenario("b62_st_resume_first_save_volume_full_r0", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tagger.py", setup=VOL62,
             teardown="umount /mnt/b62_ckpt && rmdir /mnt/b62_ckpt", env=dict(ENV62)),
    Scenario("b62_cfg_zero1_optim_shards_resume_ws4_to_3", "train_zero.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_zero.py", setup=ZERO62, env=dict(ENV62)),
]

# ---- batch 61 (h212): start-up failures, before or at the first step, as real clusters produce them: a (dp, tp) mesh
# bigger than the world torchrun started; the --master-port still held by the previous run's leftover store; node 1's
# profile exporting a stale rendezvous head; node 1 launched with --node-rank 2 of 2; a secret, a PYTHONPATH entry and
# an experiment config present on node 0 only; node 1's module file choosing the MPI backend; the process group
# initialised twice; CUDA_VISIBLE_DEVICES naming one device for two local ranks on a CPU job; ids b61_* ----
ENV61 = {"OMP_NUM_THREADS": "1"}
# recorded one at a time with ZOO_PORT_OFFSET = 29700 + 5k - (31100 + 7 * index) = -7609 - 2k for the k-th scenario below
# (k = 0..9; indices 887-896): its port at 29700 + 5k (29700-29745)
STATIC61 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
            "{file}{args}")
# the previous run of the same job (Ctrl-C'd an hour ago) left its launcher's TCPStore process behind, still bound to
# the port the team's launch script always uses; it carries ZOO_RUN, so the recorder ends it after the run
ORPHAN61 = (r"""setsid nohup python -c "import time, torch.distributed as d; """
            r"""s = d.TCPStore('0.0.0.0', {port}, 1, True, wait_for_workers=False); time.sleep(150)" > /dev/null 2>&1 &
for i in $(seq 120); do ss -ltnH | grep -q ':{port} ' && break; sleep 0.5; done""")
TEXTAUG61 = r"""mkdir -p vendor/textaug && cat > vendor/textaug/__init__.py <<'EOF2'
# The team's text-image augmentations (vendored).
import torch


def random_stroke_noise(x, g, p=0.05):
    mask = torch.rand(x.shape, generator=g) < p
    return torch.where(mask, 1.0 - x, x)
EOF2"""
MTCFG61 = r"""mkdir -p configs/exp && cat > configs/exp/mt_base.yaml <<'EOF2'
vocab: 8000
d_model: 128
lr: 0.0005
steps: 100
EOF2"""
SCENARIOS += [
    # dp 2 x tp 2 from the script's defaults; the job was resized to 3 processes
    Scenario("b61_cfg_mesh_dp2_tp2_nproc3", "train_tp.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tp.py",
             env={**ENV61}),
    Scenario("b61_inf_master_port_orphan_prev_run", "train_seg.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_seg.py", setup=ORPHAN61,
             env={**ENV61}),
    # node 1's ~/.bashrc still exports the head node of last week's allocation (192.0.2.10, TEST-NET-1: unroutable)
    Scenario("b61_cfg_rdzv_endpoint_stale_head_node1_c10d_twonode_n1", "train_kws.py",
             "torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-id kws-61 --rdzv-endpoint "
             "$HEAD_NODE:{port} --rdzv-conf join_timeout=30,read_timeout=25 train_kws.py",
             cmd2="torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-id kws-61 --rdzv-endpoint "
                  "$HEAD_NODE:{port} --rdzv-conf join_timeout=30,read_timeout=25 train_kws.py",
             env={**ENV61, "HEAD_NODE": "127.0.0.1"}, env2={"HEAD_NODE": "192.0.2.10"}),
    # node 1 typed --node-rank 2 (1-based, from the hostfile's line number)
    Scenario("b61_cfg_node_rank_2_static_twonode_n1", "train_twotower.py",
             STATIC61.format(k=0, port="{port}", file="--rdzv-conf timeout=25,read_timeout=25 train_twotower.py",
                             args=""),
             cmd2=STATIC61.format(k=2, port="{port}", file="--rdzv-conf timeout=25,read_timeout=25 train_twotower.py",
                                  args=""),
             env={**ENV61}),
    # the feature-store secret is mounted into node 0's environment only (node 1's secret mount did not come up)
    Scenario("b61_cfg_env_token_missing_node1_static_twonode_n1", "train_ctr.py",
             STATIC61.format(k=0, port="{port}", file="train_ctr.py", args=""),
             cmd2=STATIC61.format(k=1, port="{port}", file="train_ctr.py", args=""),
             env={**ENV61, "FEATURE_STORE_TOKEN": "fs_live_7Hq2c9XkP1"},
             unset2=("FEATURE_STORE_TOKEN",)),
    # PYTHONPATH=vendor comes from node 0's profile; node 1's profile (a fresh image) does not set it
    Scenario("b61_cfg_pythonpath_vendor_missing_node1_static_twonode_n1", "train_ocr.py",
             STATIC61.format(k=0, port="{port}", file="train_ocr.py", args=""),
             cmd2=STATIC61.format(k=1, port="{port}", file="train_ocr.py", args=""), setup=TEXTAUG61,
             env={**ENV61, "PYTHONPATH": "vendor"}, unset2=("PYTHONPATH",)),
    # node 1 is from the MPI partition, whose module file exports DIST_BACKEND=mpi
    Scenario("b61_cfg_backend_mpi_node1_static_twonode_n1", "train_vit.py",
             STATIC61.format(k=0, port="{port}", file="train_vit.py", args=""),
             cmd2=STATIC61.format(k=1, port="{port}", file="train_vit.py", args=""),
             env={**ENV61}, env2={"DIST_BACKEND": "mpi"}),
    Scenario("b61_uc_init_process_group_twice_trainer", "train_charlm.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_charlm.py", env={**ENV61}),
    # the job script still exports CUDA_VISIBLE_DEVICES=0 from a one-GPU debugging session; the job runs on a CPU node
    Scenario("b61_cfg_cuda_visible_one_device_nproc2_r1", "train_det.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_det.py",
             env={**ENV61, "CUDA_VISIBLE_DEVICES": "0"}),
    # node 1's checkout predates the commit that added configs/exp/ (its configs/exp is empty: an empty tmpfs)
    Scenario("b61_cfg_exp_config_missing_node1_static_twonode_n1", "train_mt.py",
             STATIC61.format(k=0, port="{port}", file="train_mt.py", args=" --config configs/exp/mt_base.yaml"),
             cmd2=STATIC61.format(k=1, port="{port}", file="train_mt.py", args=" --config configs/exp/mt_base.yaml"),
             setup=MTCFG61, mask2="configs/exp", env={**ENV61}),
]

# ---- batch 64 (h215): two things go wrong in one log and on-call must find the first cause: a harmless warning or a
# retry that succeeded early, then the real crash from another cause (a DataLoader worker-count warning, then a label
# out of range in one rank's shard; a late assets mount retried, then a checkpoint volume that fills); a crash on one
# rank followed by a louder error on another while it is torn down (an emergency checkpoint's chained traceback, C++
# stack traces of the site profile); torchrun restarts (--max-restarts 1) whose attempt 1 fails from a second cause
# (a run directory that exists, a resume key); hangs whose timeout is followed by a crash in an atexit hook; a rank
# OOM-killed by its memory cgroup after another rank printed a caught traceback; a slowdown that ends in a timeout;
# ids b64_* ----
ENV64 = {"OMP_NUM_THREADS": "1"}
# each rank's shard of the labelling tool's export (1,600 embeddings); shard 1's sample 1000 carries the label id 12
# of a class the tool added after the 10-class head was set up
SHARDS64 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(64)
for r in range(3):
    y = torch.randint(0, 10, (1600,), generator=g)
    x = torch.randn(1600, 128, generator=g)
    x[torch.arange(1600), y] += 2.0
    if r == 1:
        y[1000] = 12
    torch.save({"emb": x, "label": y}, f"data/shard-{r}.pt")
EOF2"""
# the pretrained encoder sits in staged/ until the assets mount "comes up" (the recorder copies it into assets/ once
# rank 0 logs its first retry); the checkpoint volume is a 12 MiB tmpfs (one full checkpoint is ~7.4 MB)
KWS64 = (r"""mkdir -p assets staged /mnt/b64_ckpt && (mountpoint -q /mnt/b64_ckpt && umount /mnt/b64_ckpt || true) && """
         r"""mount -t tmpfs -o size=12m tmpfs /mnt/b64_ckpt && python - <<'EOF2'
import torch, torch.nn as nn
torch.manual_seed(3)
enc = nn.Sequential(nn.Linear(40 * 16, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU())
torch.save(enc.state_dict(), "staged/encoder-v3.pt")
EOF2""")
# one .npz per turbine-day per rank (64 windows each); rank 1's sixth file was cut short by an interrupted sync
NPZ64 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(64)
for r in range(3):
    os.makedirs(f"data/r{r}", exist_ok=True)
    for d in range(12):
        x = rng.standard_normal((64, 24, 12)).astype(np.float32)
        y = x[:, -6:, 0].copy()
        p = f"data/r{r}/turbine-{r * 12 + d:03d}-day{d:02d}.npz"
        np.savez_compressed(p, x=x, y=y)
        if r == 1 and d == 5:
            raw = open(p, "rb").read()
            open(p, "wb").write(raw[: len(raw) // 2])
EOF2"""
# two review shards of 2,000 records; rank 1's line 900 was cut mid-record by the export job
REVIEWS64 = r"""mkdir -p data && python - <<'EOF2'
import json, random
words = "great terrible fine slow fast broken love hate ok refund again never always works".split()
for r in range(2):
    rng = random.Random(r)
    lines = [json.dumps({"id": r * 10000 + i, "text": " ".join(rng.choice(words) for _ in range(12)),
                         "stars": rng.randint(1, 5)}) for i in range(2000)]
    if r == 1:
        lines[900] = lines[900][:37]
    open(f"data/reviews-{r}.jsonl", "w").write("\n".join(lines) + "\n")
EOF2"""
# two validation files for three ranks
VAL64 = r"""mkdir -p val && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(7)
for i in range(2):
    x = torch.randn(500, 96, generator=g)
    torch.save({"x": x, "y": (x[:, :3].sum(1) > 0).long()}, f"val/part-{i}.pt")
EOF2"""
TR64 = "torchrun --nproc-per-node {n} --master-port {{port}} {f}"
RESTART64 = ("torchrun --nproc-per-node {n} --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{{port}} "
             "--log-dir logs --tee 3 {f}")
SCENARIOS += [
    Scenario("b64_data_loader_workers_warn_then_label_oob_r1", "train_scenes.py", TR64.format(n=3, f="train_scenes.py"),
             setup=SHARDS64, env=dict(ENV64)),
    # the assets mount comes up 0-1 s after rank 0's first retry warning: the second attempt loads the encoder
    Scenario("b64_st_ckpt_enospc_after_weights_retry_r0", "train_kws.py", TR64.format(n=3, f="train_kws.py"),
             setup=KWS64, teardown="umount /mnt/b64_ckpt && rmdir /mnt/b64_ckpt", env=dict(ENV64),
             action=("shell", "retrying in", "sleep 1; cp staged/encoder-v3.pt assets/encoder-v3.pt")),
    # the team's launch script passes --monitor-interval 5 (the agent looks at its workers every 5 s)
    Scenario("b64_uc_class_counts_keyerror_r2_then_r0_emergency_save", "train_landcover.py",
             "torchrun --nproc-per-node 3 --monitor-interval 5 --master-port {port} train_landcover.py",
             env=dict(ENV64)),
    # the post-mortem share (/mnt/postmortem) is not mounted on this node; the launch script passes --monitor-interval 3;
    # the site profile sets
    # TORCH_SHOW_CPP_STACKTRACES=1 on every node
    Scenario("b64_data_bad_npz_r1_then_r0_postmortem_save", "train_wind.py",
             "torchrun --nproc-per-node 3 --monitor-interval 3 --master-port {port} train_wind.py",
             setup=NPZ64, env={**ENV64, "TORCH_SHOW_CPP_STACKTRACES": "1"}),
    Scenario("b64_data_restart_bad_jsonl_r1_then_rundir_exists", "train_reviews.py",
             RESTART64.format(n=2, f="train_reviews.py --name sentiment-base"), setup=REVIEWS64, env=dict(ENV64)),
    # rank 1's container has a smaller memory limit (cgroup v1, from its start); attempt 1's rank 1 is a new process
    Scenario("b64_oom_restart_memcg_r1_then_resume_keyerror", "train_ctr.py", RESTART64.format(n=3, f="train_ctr.py"),
             env=dict(ENV64), action=("cgroup", 1, 420), dmesg="/kubepods/burstable/pod-ctr-w1"),
    Scenario("b64_hang_eval_shard_skip_r2_then_atexit_save", "train_defects.py",
             TR64.format(n=3, f="train_defects.py"), setup=VAL64, env=dict(ENV64)),
    # rank 1's container paused (cgroup freezer) from its step-300 line, thawed 32 s later
    Scenario("b64_hang_frozen_r1_then_atexit_metrics_flush", "train_demand.py", TR64.format(n=3, f="train_demand.py"),
             env=dict(ENV64), action=("freeze", 1, "rank=1 step=300 ", 32)),
    Scenario("b64_oom_memcg_r2_after_r0_caught_metrics_tb", "train_recs.py", TR64.format(n=3, f="train_recs.py"),
             env=dict(ENV64), action=("cgroup", 2, 480), dmesg="/kubepods/burstable/pod-recs-w2"),
    Scenario("b64_hang_slowdown_r0_growing_eval_timeout", "train_fraud.py", TR64.format(n=3, f="train_fraud.py"),
             env=dict(ENV64)),
]

# ---- batch 63 (h214): fail-slow at realistic sizes with a clean truth: each step's main cost is a fixed time standing
# for the accelerator's kernels (simgpu.kernels: a sleep of the nominal kernel time scaled by the device's current SM
# clock, which the node reports in node/gpu<R>/sm_clock_mhz), plus a tiny CPU model and a real gloo all-reduce of its
# gradients; the fault is a change of the node's state written by the recorder at a step's line (one GPU's clock cut
# by thermal slowdown x1.2 / x1.3 / x1.5, the whole job's GPUs power-capped x1.2 / x1.3, every NIC or node 1's NICs
# renegotiated to half rate, one rank's shard reads falling through to the object store), so the injected factor is
# exact; two periodic costs in the script's own code (rank 0's preview decode every 10 steps, the last rank's debug
# activation dump every 5 steps: x2 on those steps); one clean control with evaluation and checkpoint pauses (under
# clean/); ids b63_* ----
ENV63 = {"OMP_NUM_THREADS": "1"}
# the node's devices as the job sees them (this host has no GPU): simgpu.py and node/ written by every scenario's setup
SIMGPU63 = r"""mkdir -p node && for r in 0 1 2 3; do mkdir -p node/gpu$r node/nic$r node/store$r;
echo 1950 > node/gpu$r/sm_clock_mhz; echo 200 > node/nic$r/link_gbps; echo 12 > node/store$r/read_latency_ms; done
cat > simgpu.py <<'EOF2'
'''Stand-in for the node's accelerators, NICs and shard store on a host without them: each call takes the time the
real work takes, at the rate the node reports now (node/<device>/...). It knows nothing of the job's steps.'''
import os
import time

_NODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
FULL_SM_CLOCK_MHZ, FULL_LINK_GBPS = 1950.0, 200.0


def _now(device, key, full):
    try:
        with open(os.path.join(_NODE, device, key)) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return full


def kernels(seconds, device):
    '''The device's kernels for `seconds` of work at full clock (a slower SM clock stretches them).'''
    time.sleep(seconds * FULL_SM_CLOCK_MHZ / _now(device, "sm_clock_mhz", FULL_SM_CLOCK_MHZ))


def wire(seconds, nic):
    '''A transfer that takes `seconds` at the NIC's full link rate.'''
    time.sleep(seconds * FULL_LINK_GBPS / _now(nic, "link_gbps", FULL_LINK_GBPS))


def store_read(client):
    '''One chunk read through the shard store client (its current read latency).'''
    time.sleep(_now(client, "read_latency_ms", 12.0) / 1000.0)
EOF2"""
# clip features per rank for the shard store run: 6,400 clips of 64 features, 16 classes
CLIPS63 = SIMGPU63 + r"""
mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(63)
for r in range(3):
    y = rng.integers(0, 16, 6400)
    x = rng.standard_normal((6400, 64)).astype(np.float32)
    x[np.arange(6400), y * 4] += 2.0
    np.save(f"data/shard-{r}.npy", x)
    np.save(f"data/labels-{r}.npy", y)
EOF2"""


def _node63(what: str, files: str, value: int) -> str:
    """The recorder's outside action: the node's state changes (a message on the recorder's stderr only)."""
    return f"for f in {files}; do echo {value} > node/$f; done; echo '  b63: {what}' >&2"


INTENT63 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
            "train_intent.py")
SCENARIOS += [
    # from rank 1's step-113 line GPU 1's SM clock is 1625 MHz of 1950 (HW thermal slowdown): its kernels x1.2
    Scenario("b63_slow_gpu_clock_r1_x12_feed", "train_kws.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_kws.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", "[rank1] step 113 |",
                     _node63("gpu1 sm clock 1950 -> 1625 MHz", "gpu1/sm_clock_mhz", 1625))),
    # from rank 2's step-103 line GPU 2's SM clock is 1500 MHz (x1.3)
    Scenario("b63_slow_gpu_clock_r2_x13_logging", "train_reviews.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_reviews.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", "[rank2] train_reviews: step=103 ",
                     _node63("gpu2 sm clock 1950 -> 1500 MHz", "gpu2/sm_clock_mhz", 1500))),
    # from rank 0's step-115 record GPU 3's SM clock is 1300 MHz (x1.5); only rank 0 prints
    Scenario("b63_slow_gpu_clock_r3_x15_rank0json_feed", "train_ctr.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_ctr.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", '{"step": 115, ',
                     _node63("gpu3 sm clock 1950 -> 1300 MHz", "gpu3/sm_clock_mhz", 1300))),
    # no outside action: rank 0 decodes a preview batch every 10 steps before the all-reduce (the script's own code)
    Scenario("b63_slow_uc_preview_every10_r0_hfdict", "train_captions.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_captions.py", setup=SIMGPU63, env=dict(ENV63)),
    # from rank 0's iter-127 line both GPUs of the job are power-capped: SM clock 1625 MHz (x1.2)
    Scenario("b63_slow_inf_power_cap_job_x12_rank0_feed", "train_fraud.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_fraud.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", "| iter 127/200 |",
                     _node63("gpu0-1 power cap: sm clock 1950 -> 1625 MHz", "gpu0/sm_clock_mhz gpu1/sm_clock_mhz",
                             1625))),
    # from rank 0's iteration-90 line all three GPUs are power-capped: SM clock 1500 MHz (x1.3)
    Scenario("b63_slow_inf_power_cap_job_x13_megatron", "pretrain_gpt.py",
             "torchrun --nproc-per-node 3 --master-port {port} pretrain_gpt.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", "iteration       90/     200 |",
                     _node63("gpu0-2 power cap: sm clock 1950 -> 1500 MHz",
                             "gpu0/sm_clock_mhz gpu1/sm_clock_mhz gpu2/sm_clock_mhz", 1500))),
    # from rank 0's step-109 record every NIC of the job runs at 100 of 200 Gb/s (the fabric's links renegotiated)
    Scenario("b63_slow_net_fabric_job_comm_jsonl_feed", "train_twotower.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_twotower.py", setup=SIMGPU63, env=dict(ENV63),
             action=("shell", '{"rank": 0, "step": 109, ',
                     _node63("nic0-2 link 200 -> 100 Gb/s", "nic0/link_gbps nic1/link_gbps nic2/link_gbps", 100))),
    # two agents as two nodes (ranks 2-3 on node 1); from rank 2's step-132 line node 1's NICs run at 100 Gb/s
    Scenario("b63_slow_net_node1_link_twonode_n1", "train_intent.py", INTENT63.format(k=0, port="{port}"),
             cmd2=INTENT63.format(k=1, port="{port}"), setup=SIMGPU63, env=dict(ENV63),
             action=("shell", "[node1 rank2] step 132/200 ",
                     _node63("node1 nic2-3 link 200 -> 100 Gb/s", "nic2/link_gbps nic3/link_gbps", 100))),
    # from rank 1's step-101 line rank 1's shard reads miss the node-local cache: 12 -> 72 ms per chunk
    Scenario("b63_slow_st_shard_cache_lost_r1_feed", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tagger.py", setup=CLIPS63, env=dict(ENV63),
             action=("shell", "tagger.rank1 | step 101/200 ",
                     _node63("store1 read latency 12 -> 72 ms", "store1/read_latency_ms", 72))),
    # clean control (clean/runs/): evaluation every 50 steps, checkpoint every 100, no fault
    Scenario("b63_clean_ckpt_eval_pause_hfdict", "train_router.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_router.py", setup=SIMGPU63, env=dict(ENV63),
             clean=True),
]
SCENARIOS += [
    # no outside action: from step 80 the last rank dumps its activations every 5 steps (a debug flag left on)
    Scenario("b63_slow_uc_act_dump_every5_r2_logfmt", "train_rewrite.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_rewrite.py", setup=SIMGPU63, env=dict(ENV63)),
]

# ---- batch 66 (h218): numerics and training-state failures in data-parallel jobs: a NaN / inf loss caught by the
# job's own finite-loss check, caused by one bad sample in one rank's shard (an empty CSV cell; a reading exported as
# 1e999); autograd's anomaly detection naming LogBackward0 on the rank whose shard has zero counts (a guarded
# torch.where(log)); a learning rate 100x too high and an Adam eps of 0 in the config files; DDP replicas that start
# from different weights (init_sync=False, no seed) caught by the job's checksum check; all-reduces whose dtype (rank
# 0's in-place model.float() for evaluation) or size (ranks that read a stale resolved config) differ, with gloo's
# size error; a resume where one rank picks a newer per-rank state and the step counts disagree; a gradient-norm
# explosion from one rank's unscaled shard caught by the job's clip assertion; ids b66_* ----
ENV66 = {"OMP_NUM_THREADS": "1"}
# the listings export, one CSV per rank; in part 1 the 'sqft' cell of listing 2,347 (row 2,348) is empty: genfromtxt
# reads it as nan
LISTINGS66 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(66)
cols = ["sqft", "beds", "baths", "age", "lot", "dist_cbd", "school", "crime", "garage", "floor", "renov", "view", "price"]
w = rng.standard_normal(12)
allx = []
for r in range(3):
    x = rng.standard_normal((3000, 12)).astype(np.float32) * [800, 1, 1, 20, 3000, 8, 1, 1, 1, 5, 1, 1] + \
        [1800, 3, 2, 35, 6000, 12, 7, 3, 1, 3, 0, 0]
    y = ((x - x.mean(0)) / x.std(0)) @ w * 80000 + 450000 + rng.standard_normal(3000) * 20000
    allx.append(np.c_[x, y])
    rows = [",".join(cols)] + [",".join(f"{v:.2f}" for v in row) for row in np.c_[x, y]]
    if r == 1:
        cells = rows[2348].split(",")
        cells[0] = ""
        rows[2348] = ",".join(cells)
    open(f"data/listings-part-{r}.csv", "w").write("\n".join(rows) + "\n")
a = np.concatenate(allx)
np.savez("data/stats.npz", mean=a[:, :-1].mean(0), std=a[:, :-1].std(0), y_mean=a[:, -1].mean(), y_std=a[:, -1].std())
EOF2"""
# each turbine group's windows as JSON lines; in group 3 one window's pitch reading was exported as 1e999 (the
# logger's overflow value), which json.loads reads as inf
TURBINE66 = r"""mkdir -p data && python - <<'EOF2'
import json
import numpy as np
rng = np.random.default_rng(66)
for r in range(4):
    with open(f"data/group-{r}.jsonl", "w") as f:
        for i in range(640):
            t = np.arange(49)[:, None] * 0.2 + rng.uniform(0, 6.28, 3)
            x = np.sin(t) + 0.05 * rng.standard_normal((49, 3))
            line = json.dumps({"turbine": f"T{r}-{i % 16:02d}", "window": i, "readings": np.round(x, 4).tolist()})
            if r == 3 and i == 417:
                line = line.replace(str(round(float(x[30, 1]), 4)), "1e999", 1)
            f.write(line + "\n")
EOF2"""
# engagement counts per listing; shard 2 ends with 900 new listings that have no views or saves yet (zeros)
CONV66 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(66)
for r in range(3):
    n = 3840
    counts = torch.poisson(torch.full((n, 8), 6.0), generator=g) + 1
    if r == 2:
        counts[2940:, :2] = 0
    dense = torch.randn(n, 16, generator=g)
    y = ((counts.log().sum(1) / 8 + dense[:, 0] + 0.3 * torch.randn(n, generator=g)) > 1.8).float()
    torch.save({"counts": counts, "dense": dense, "converted": y}, f"data/listings-{r}.pt")
EOF2"""
LRYAML66 = r"""mkdir -p configs && cat > configs/train.yaml <<'EOF2'
# demand forecaster, SGD; lr tuned on the 2-rank sweep (3e-3)
optim:
  lr: 3.0e-1
  momentum: 0.9
train:
  steps: 300
  batch_size: 256
  log_every: 2
EOF2"""
ROUTER66 = r"""mkdir -p configs data && cat > configs/router.yaml <<'EOF2'
model:
  vocab: 20000
  dim: 64
  queues: 24
optim:
  lr: 2.0e-3
  betas: [0.9, 0.98]
  eps: 0.0
train:
  batch_size: 64
EOF2
python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(66)
for r in range(3):
    n = 1920
    tickets = [torch.randint(0, 20000, (int(torch.randint(8, 60, (1,), generator=g)),), generator=g) for _ in range(n)]
    queue = torch.tensor([int(t[:3].sum()) % 24 for t in tickets])
    torch.save({"tickets": tickets, "queue": queue}, f"data/tickets-{r}.pt")
EOF2"""
CORPUS66 = r"""mkdir -p data && python - <<'EOF2'
import random
random.seed(66)
words = "the of and to in a is that for it as was with be by on not he this are or his from at which".split()
lines = [" ".join(random.choice(words) for _ in range(random.randint(5, 14))).capitalize() + "." for _ in range(3000)]
open("data/corpus.txt", "w").write("\n".join(lines))
EOF2"""
# the base config, a large utterance file (rank 0 counts its words) and yesterday's run/resolved_config.json (hidden
# 256, a vocabulary of 1,874) left in the run directory
INTENT66 = r"""mkdir -p configs data run && cat > configs/intent.yaml <<'EOF2'
hidden: 256
intents: 12
min_count: 3
lr: 1.0e-3
EOF2
echo '{"hidden": 256, "intents": 12, "min_count": 3, "lr": 0.001, "vocab": 1874}' > run/resolved_config.json
touch -d '2026-12-06 18:41' run/resolved_config.json
python - <<'EOF2'
import random
random.seed(66)
vocab = [f"w{i}" for i in range(2400)]
with open("data/utterances.txt", "w") as f:
    for i in range(400000):
        f.write(f"intent{random.randint(0, 11)} " + " ".join(random.choice(vocab) for _ in range(8)) + "\n")
EOF2"""
# the previous run (300 steps from 0) saved step 100 and 200 on every rank; it was preempted while writing step 300:
# rank 1's file was complete, ranks 0 and 2 had not written theirs
RESUME66 = r"""mkdir -p ckpt && python - <<'EOF2'
import os
import torch
import torch.nn as nn
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(5)
for step in range(1, 301):
    x = torch.randn(256, 32, generator=g)
    loss = nn.functional.binary_cross_entropy_with_logits(net(x), (x[:, :3].sum(1, keepdim=True) > 0).float())
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 100 == 0:
        os.makedirs(f"ckpt/step-{step:05d}", exist_ok=True)
        for r in range(3):
            if step == 300 and r != 1:
                continue
            torch.save({"model": net.state_dict(), "optim": opt.state_dict(), "step": step, "rng": g.get_state()},
                       f"ckpt/step-{step:05d}/rank{r}.pt")
EOF2"""
# three lines' exported patches (about 8 % of the inspectors' labels wrong); line 2's export after its exporter
# upgrade (patches 1,280 on) stores raw 0-255 values
PATCH66 = r"""python - <<'EOF2'
import os
import numpy as np
rng = np.random.default_rng(66)
for r in range(3):
    os.makedirs(f"data/line-{r}", exist_ok=True)
    n = 1920
    y = rng.integers(0, 4, n)
    x = rng.uniform(0.2, 0.5, (n, 16, 16)).astype(np.float32)
    for k in range(4):
        x[y == k, 4 * k:4 * k + 4, :] += 0.15
    flip = rng.random(n) < 0.08  # the inspectors' labelling error rate
    y[flip] = rng.integers(0, 4, flip.sum())
    if r == 2:
        x[1280:] = np.round(x[1280:] * 255.0)
    np.save(f"data/line-{r}/patches.npy", x.astype(np.float32))
    np.save(f"data/line-{r}/labels.npy", y.astype(np.int64))
EOF2"""
SCENARIOS += [
    Scenario("b66_data_nan_sample_isfinite_guard_r1", "train_price.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_price.py", setup=LISTINGS66, env=dict(ENV66)),
    Scenario("b66_data_inf_reading_isfinite_spawn_r3", "train_turbine.py",
             "MASTER_PORT={port} python train_turbine.py", setup=TURBINE66, env=dict(ENV66)),
    Scenario("b66_uc_where_log_zero_detect_anomaly_r2", "train_conv.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_conv.py", setup=CONV66, env=dict(ENV66)),
    Scenario("b66_cfg_lr_100x_yaml_divergence", "train_demand.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_demand.py --config configs/train.yaml",
             setup=LRYAML66, env=dict(ENV66)),
    Scenario("b66_cfg_adam_eps_zero_yaml_nan", "train_router.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_router.py", setup=ROUTER66, env=dict(ENV66)),
    Scenario("b66_uc_ddp_init_sync_false_noseed_replica_check", "train_ae.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ae.py", env=dict(ENV66)),
    Scenario("b66_uc_rank0_eval_float_bf16_allreduce_r0", "train_charlm.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_charlm.py", setup=CORPUS66, env=dict(ENV66)),
    Scenario("b66_uc_stale_resolved_config_allreduce_shape", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py --config configs/intent.yaml "
             "--hidden 384", setup=INTENT66, env=dict(ENV66)),
    Scenario("b66_uc_resume_latest_per_rank_step_mismatch_r1", "train_click.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_click.py", setup=RESUME66, env=dict(ENV66)),
    Scenario("b66_data_unscaled_shard_gradnorm_assert_r2", "train_defects.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_defects.py", setup=PATCH66, env=dict(ENV66)),
]

# ---- batch 67 (h219): software-environment failures that differ between nodes or ranks, as heterogeneous clusters
# produce them (each simulated node has its own environment: its own site directory on PYTHONPATH, its own library
# directory, its own profile variables, its own local scratch, its own leftover processes): an older copy of a team
# package on node 1 (version check), a team package missing from node 1's site directory (ModuleNotFoundError after
# init), a native library missing from node 1's image (ctypes 'cannot open shared object file'), a compiled extension
# whose core library on node 1 is older ('undefined symbol'), a training flag set differently in node 1's profile (flat
# all-reduce sizes differ), a stage-in that ran on the first node only, a stale torch_extensions lock left by a killed
# build (local rank 0 waits forever, the others time out), a leftover process of the previous job on node 1 holding the
# token-cache file lock, a per-rank cache directory owned by another user, node 1's XDG_CACHE_HOME on a directory the
# job cannot write; ids b67_* ----
ENV67 = {"OMP_NUM_THREADS": "1"}
# recorded one at a time with ZOO_PORT_OFFSET = 30250 + 5k - (31100 + 7 * index) for the k-th scenario below (k = 0..9):
# its port at 30250 + 5k (30250-30295)
STATIC67 = "torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} {file}"
C10D67 = ("torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-id asr-67 --rdzv-endpoint 127.0.0.1:{port} "
          "--rdzv-conf join_timeout=40,read_timeout=30 {file}")
# the team's site directory (site/, on PYTHONPATH in every node's profile); node 1's copy of it (site_node1/, bind-mounted
# over site/ on that node) holds subword_lite 1.9.0 from the image of two months ago, node 0's holds 2.3.1
SUBWORD67 = r"""mkdir -p site/subword_lite site_node1/subword_lite
for d in site:2.3.1:259 site_node1:1.9.0:250; do IFS=: read dir ver vocab <<< "$d"; cat > $dir/subword_lite/__init__.py <<EOF2
# subword_lite: the team's sub-word tokenizer
__version__ = "$ver"


class Tokenizer:
    vocab_size = 8000 + $vocab

    def encode(self, text):
        return [hash(t) % self.vocab_size for t in text.split()]
EOF2
done"""
# site/ on node 0 holds fastctc and textnorm; node 1's site (site_node1/, bind-mounted over site/) was synced before
# fastctc was added and holds textnorm only
FASTCTC67 = r"""mkdir -p site/fastctc site/textnorm site_node1/textnorm
cat > site/fastctc/__init__.py <<'EOF2'
"""'"""'"""fastctc: CTC loss with blank collapsing (the team's kernel; CPU fallback)."""'"""'"""
import torch
import torch.nn.functional as F


def ctc_loss(logp, targets, blank=0):
    t, b = logp.shape[1], logp.shape[0]
    lengths = torch.full((b,), t, dtype=torch.long)
    tl = torch.full((b,), targets.shape[1], dtype=torch.long)
    return F.ctc_loss(logp.transpose(0, 1), targets, lengths, tl, blank=blank, zero_infinity=True)
EOF2
echo 'def normalize(s): return " ".join(s.lower().split())' > site/textnorm/__init__.py
cp site/textnorm/__init__.py site_node1/textnorm/__init__.py"""
# the platform's feature-hashing library, installed by the node image under opt/hashemb/lib (on LD_LIBRARY_PATH);
# node 1 runs an image built without it (its opt/hashemb/lib is empty)
HASHEMB67 = r"""mkdir -p opt/hashemb/lib opt/hashemb/src && cat > opt/hashemb/src/hashemb.c <<'EOF2'
#include <stdint.h>
void hash_features(const int64_t *ids, long n, long buckets, int64_t *out) {
    for (long i = 0; i < n; i++) {
        uint64_t h = (uint64_t)ids[i] * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        out[i] = (int64_t)(h % (uint64_t)buckets);
    }
}
EOF2
gcc -O2 -shared -fPIC -o opt/hashemb/lib/libhashemb.so opt/hashemb/src/hashemb.c"""
# the team's _fastpool extension (ext/, built against libfastpool_core 2.1, found through its rpath $ORIGIN/lib);
# node 1's image ships libfastpool_core 1.4 in ext/lib (ext_lib_node1/, bind-mounted over ext/lib on that node),
# which has no fp_segment_max_v2
FASTPOOL67 = r"""mkdir -p ext/lib ext/src ext_lib_node1 && cd ext/src
cat > core_v2.c <<'EOF2'
const char *fp_version(void) { return "2.1.0"; }
float fp_segment_max(const float *x, long n) { float m = x[0]; for (long i = 1; i < n; i++) if (x[i] > m) m = x[i]; return m; }
float fp_segment_max_v2(const float *x, long n, long stride) {
    float m = x[0]; for (long i = stride; i < n; i += stride) if (x[i] > m) m = x[i]; return m; }
EOF2
cat > core_v1.c <<'EOF2'
const char *fp_version(void) { return "1.4.2"; }
float fp_segment_max(const float *x, long n) { float m = x[0]; for (long i = 1; i < n; i++) if (x[i] > m) m = x[i]; return m; }
EOF2
cat > fastpool.c <<'EOF2'
#define PY_SSIZE_T_CLEAN
#include <Python.h>
const char *fp_version(void);
float fp_segment_max_v2(const float *x, long n, long stride);
static PyObject *version(PyObject *self, PyObject *args) { return PyUnicode_FromString(fp_version()); }
static PyObject *probe(PyObject *self, PyObject *args) {
    float x[4] = {1, 3, 2, 0}; return PyFloat_FromDouble(fp_segment_max_v2(x, 4, 1)); }
static PyMethodDef methods[] = {{"version", version, METH_NOARGS, ""}, {"probe", probe, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "_fastpool", NULL, -1, methods};
PyMODINIT_FUNC PyInit__fastpool(void) { return PyModule_Create(&mod); }
EOF2
gcc -O2 -shared -fPIC -Wl,-soname,libfastpool_core.so -o ../lib/libfastpool_core.so core_v2.c
gcc -O2 -shared -fPIC -Wl,-soname,libfastpool_core.so -o ../../ext_lib_node1/libfastpool_core.so core_v1.c
gcc -O2 -shared -fPIC $(python -c 'import sysconfig; print("-I" + sysconfig.get_paths()["include"])') fastpool.c \
    -L../lib -lfastpool_core '-Wl,-rpath,$ORIGIN/lib' \
    -o ../_fastpool$(python -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"""
# the job script's stage-in (shared filesystem -> the node's local scratch) ran on the batch host only: node 0's
# scratch/tiles-v2 holds the four shards, node 1's scratch is empty (an empty tmpfs on that node)
TILES67 = r"""mkdir -p scratch/tiles-v2 && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(67)
for r in range(4):
    y = rng.integers(0, 10, 640)
    x = (rng.standard_normal((640, 3, 32, 32)) * 0.5).astype(np.float32)
    x[np.arange(640), y % 3, y, :] += 1.0
    np.savez(f"scratch/tiles-v2/train-{r:02d}-of-04.npz", x=x, y=y.astype(np.int64))
EOF2"""
# yesterday's run of the job was killed (preempted) while local rank 0 was compiling fused_rowscale into the shared
# extensions cache: its build directory holds the sources and the lock file of that build, no .so
EXTLOCK67 = r"""mkdir -p cache/torch_extensions/fused_rowscale
touch -d '2026-12-06 23:41:07' cache/torch_extensions/fused_rowscale/lock"""
# node 1's local scratch (scratch_node1/, bind-mounted over scratch/ on that node) still runs a process of the previous
# job (its tokenizer step hung on a dead NFS read and survived the job's cancellation): it holds the flock of the token
# cache's lock file; it carries ZOO_RUN, so the recorder ends it after the run
TOKLOCK67 = r"""mkdir -p scratch scratch_node1/tok-cache
setsid nohup python -c "
import fcntl, time
f = open('scratch_node1/tok-cache/intents.v3.json.lock', 'a')
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(170)
" > /dev/null 2>&1 &
for i in $(seq 100); do [ -e scratch_node1/tok-cache/intents.v3.json.lock ] && break; sleep 0.1; done; sleep 0.5"""
# the shared scratch's feature cache: rank1/ was created by another user's job with the same layout (uid 1001, 0755,
# holding that job's mfcc cache); the job runs as a non-root container user would (no DAC override)
FEATPERM67 = r"""mkdir -p scratch/featcache/rank1 && python -c "
import numpy as np; np.save('scratch/featcache/rank1/mfcc-00.npy', np.zeros((4, 13), np.float32))"
chown -R 1001:1001 scratch/featcache/rank1 && chmod 0755 scratch/featcache/rank1"""
# node 0's profile puts XDG_CACHE_HOME in the job's own directory (.cache); node 1's image profile points it at the
# node's shared, read-only-for-users cache (shared/cache, owned by uid 1001, 0755)
XDG67 = r"""mkdir -p .cache shared/cache && chown 1001:1001 shared/cache && chmod 0755 shared/cache"""
SCENARIOS += [
    Scenario("b67_cfg_shim_tokenizer_old_version_node1_static_twonode_n1", "train_ner.py",
             STATIC67.format(k=0, port="{port}", file="train_ner.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_ner.py"), setup=SUBWORD67,
             env={**ENV67, "PYTHONPATH": "site"}, bind2="site_node1:site"),
    Scenario("b67_cfg_module_missing_after_init_node1_c10d_twonode_n1", "train_asr.py",
             C10D67.format(port="{port}", file="train_asr.py"), cmd2=C10D67.format(port="{port}", file="train_asr.py"),
             setup=FASTCTC67, env={**ENV67, "PYTHONPATH": "site"}, bind2="site_node1:site"),
    Scenario("b67_inf_ctypes_lib_missing_node1_static_twonode_n1", "train_rec.py",
             STATIC67.format(k=0, port="{port}", file="train_rec.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_rec.py"), setup=HASHEMB67,
             env={**ENV67, "LD_LIBRARY_PATH": "opt/hashemb/lib"}, mask2="opt/hashemb/lib"),
    Scenario("b67_cfg_ext_undefined_symbol_node1_static_twonode_n1", "train_pointseg.py",
             STATIC67.format(k=0, port="{port}", file="train_pointseg.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_pointseg.py"), setup=FASTPOOL67,
             env={**ENV67}, bind2="ext_lib_node1:ext/lib"),
    # ADAPTER_DIM / ADAPTER_DROPOUT come from each node's training profile; node 1's says 96 (last sweep's value)
    Scenario("b67_cfg_env_adapter_dim_node1_flat_allreduce_twonode_n1", "train_adapters.py",
             STATIC67.format(k=0, port="{port}", file="train_adapters.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_adapters.py"),
             env={**ENV67, "ADAPTER_DIM": "64", "ADAPTER_DROPOUT": "0.1"}, env2={"ADAPTER_DIM": "96"}),
    Scenario("b67_cfg_stagein_first_node_only_static_twonode_n1", "train_tiles.py",
             STATIC67.format(k=0, port="{port}", file="train_tiles.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_tiles.py"), setup=TILES67, mask2="scratch",
             env={**ENV67}),
    # py-spy dumps of the three ranks 8 s after rank 2 says it waits for local rank 0's build
    Scenario("b67_hang_torch_ext_stale_lock_pyspy_r0", "train_tabular.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tabular.py", setup=EXTLOCK67,
             env={**ENV67, "TORCH_EXTENSIONS_DIR": "cache/torch_extensions"},
             action=("pyspy", "rank 2: waiting for local rank 0 to build fused_rowscale", 3, 8)),
    # py-spy dumps of the four ranks 8 s after rank 3 says it waits for its node's token cache
    Scenario("b67_hang_filelock_orphan_holder_node1_pyspy_twonode_n1", "train_intents.py",
             STATIC67.format(k=0, port="{port}", file="train_intents.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_intents.py"), setup=TOKLOCK67,
             bind2="scratch_node1:scratch", env={**ENV67},
             action=("pyspy", "rank 3: waiting for the node's token cache", 4, 8)),
    Scenario("b67_cfg_rank_feature_cache_perm_r1", "train_events.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_events.py", setup=FEATPERM67, env={**ENV67},
             drop_dac=True),
    Scenario("b67_inf_xdg_cache_not_writable_node1_static_twonode_n1", "train_bytelm.py",
             STATIC67.format(k=0, port="{port}", file="train_bytelm.py"),
             cmd2=STATIC67.format(k=1, port="{port}", file="train_bytelm.py"), setup=XDG67,
             env={**ENV67, "XDG_CACHE_HOME": ".cache"}, env2={"XDG_CACHE_HOME": "shared/cache"}, drop_dac=True),
]

# ---- batch 68 (h220): storage faults as shared and local file systems show them: node 1's local scratch (a 6 MiB
# tmpfs in node 1's own mount namespace) filling in the middle of the second checkpoint's shards; a feature cache on a
# tmpfs with few inodes (ENOSPC while the free-space check passed); the run volume (a loop ext4, errors=remount-ro)
# remounted read-only by the kernel after a file-system error (the log handler's error, then the checkpoint's); the
# run directory with the staged data deleted by a scratch cleanup (DataLoader worker FileNotFoundError); rank 0's
# fsync of the checkpoint throttled on the checkpoint volume (blkio) past the barrier's timeout; rank 1's data shard
# rewritten in place by an export job; the user's quota (btrfs qgroup, EDQUOT) on rank 2's node scratch (numpy's short
# write) and on rank 1's (a JSONL append: 'Disk quota exceeded'); a thin-provisioned checkpoint volume whose pool is
# full (fsync ENOSPC while the volume's df shows free space); the results volume frozen by a snapshot job (fsfreeze)
# while rank 0 writes its metrics, the others timing out in the all-reduce; ids b68_* ----
ENV68 = {"OMP_NUM_THREADS": "1"}
TAGGER68 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {port} "
            "train_tagger.py")
# a loop-mounted ext4 volume at /mnt/<name> (img in the work dir); errors=remount-ro as the site's fstab has it
def _vol68(name: str, mb: int = 64) -> str:
    return (f"truncate -s {mb}M {name}.img && mkfs.ext4 -q -F {name}.img && mkdir -p /mnt/{name} && "
            f"(mountpoint -q /mnt/{name} && umount /mnt/{name} || true) && "
            f"mount -o loop,errors=remount-ro {name}.img /mnt/{name}")


def _unvol68(name: str) -> str:
    return f"umount /mnt/{name}; rmdir /mnt/{name}"


# the staged feature chunks of the run (24 chunks of 192 clips, 40x32 log-mel each)
CHUNKS68 = r"""mkdir -p scratch/run-7731/data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(68)
for c in range(24):
    y = rng.integers(0, 12, 192)
    x = (rng.standard_normal((192, 40, 32)) * 0.5).astype(np.float32)
    x[np.arange(192), y * 3] += 1.0
    np.savez(f"scratch/run-7731/data/chunk-{c:04d}.npz", x=x, y=y)
EOF2"""
# three shards of 7,680 transaction records (48 float32 features + label)
TXN68 = r"""mkdir -p data && python - <<'EOF2'
import numpy as np
rng = np.random.default_rng(68)
for r in range(3):
    x = rng.standard_normal((7680, 48)).astype(np.float32)
    y = (x[:, :4].sum(1) > 1.5).astype(np.float32)
    np.concatenate([x, y[:, None]], 1).astype(np.float32).tofile(f"data/txn-shard-{r}.bin")
EOF2"""
# each rank's node scratch: one btrfs subvolume per node with the user's quota (qgroup limit 20 MiB); node {node}'s
# holds {fill} of an earlier run's leftovers
QUOTA68 = (r"""truncate -s 256M scratch.img && mkfs.btrfs -q -f scratch.img && mkdir -p /mnt/b68_scratch && """
           r"""(mountpoint -q /mnt/b68_scratch && umount /mnt/b68_scratch || true) && """
           r"""mount -o loop scratch.img /mnt/b68_scratch && btrfs quota enable /mnt/b68_scratch && """
           r"""for n in 0 1 2; do btrfs subvolume create /mnt/b68_scratch/node$n > /dev/null && """
           r"""btrfs qgroup limit 20M /mnt/b68_scratch/node$n; done && mkdir -p /mnt/b68_scratch/node{node}/mlusr/old-runs && """
           r"""head -c {fill} /dev/urandom > /mnt/b68_scratch/node{node}/mlusr/old-runs/{old} && sync""")
SCENARIOS += [
    # node 1's local scratch (scratch/) is a 6 MiB tmpfs in node 1's mount namespace; node 0's is the work dir
    Scenario("b68_st_ckpt_node1_scratch_enospc_twonode_n1", "train_tagger.py", TAGGER68.format(k=0, port="{port}"),
             cmd2=TAGGER68.format(k=1, port="{port}"), setup="mkdir -p scratch", env=dict(ENV68), mask2="scratch",
             mask2_size="6m"),
    # the shared feature cache: a 256 MiB tmpfs with 1,600 inodes
    Scenario("b68_st_inode_exhaust_feature_cache", "featurize_train.py",
             "torchrun --nproc-per-node 3 --master-port {port} featurize_train.py",
             setup="mkdir -p /mnt/b68_featcache && (mountpoint -q /mnt/b68_featcache && umount /mnt/b68_featcache "
                   "|| true) && mount -t tmpfs -o size=256m,nr_inodes=1600 tmpfs /mnt/b68_featcache",
             teardown="umount /mnt/b68_featcache; rmdir /mnt/b68_featcache", env=dict(ENV68)),
    # from rank 0's step-60 line the run volume has a file-system error (ext4's trigger_fs_error): the kernel
    # remounts it read-only (errors=remount-ro)
    Scenario("b68_st_erofs_remount_log_then_ckpt_r0", "train_ctr.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_ctr.py", setup=_vol68("b68_runs"),
             teardown=_unvol68("b68_runs"), env=dict(ENV68),
             action=("shell", "[rank0] step 60/200",
                     "echo 1 > /sys/fs/ext4/$(basename $(findmnt -no SOURCE /mnt/b68_runs))/trigger_fs_error; "
                     "echo '  b68: ext4 error on the run volume -> remounted read-only' >&2")),
    # from rank 0's epoch-2 step-100 line the scratch cleanup job deletes the run directory (older than its limit)
    Scenario("b68_st_rundir_purged_data_read", "train_kws.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_kws.py", setup=CHUNKS68, env=dict(ENV68),
             action=("shell", "[rank0] epoch 2 step 100 ",
                     "rm -rf scratch/run-7731; echo '  b68: scratch cleanup removed scratch/run-7731' >&2")),
    # after rank 0's first checkpoint, its writes to the checkpoint volume are throttled to 250 kB/s (blkio, v1):
    # the second checkpoint's fsync takes ~30 s
    Scenario("b68_hang_ckpt_fsync_stalled_r0", "train_retrieval.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_retrieval.py", setup=_vol68("b68_ckptvol"),
             teardown=_unvol68("b68_ckptvol"), env=dict(ENV68),
             action=("blkio_write", 0, "rank0 checkpoint step 50 written", "/mnt/b68_ckptvol", 250000)),
    # at rank 1's step-40 line the export job rewrites shard 1 in place: the file is reopened for writing (truncated)
    # and holds only its first 3,000 records when rank 1 reads on
    Scenario("b68_data_shard_truncated_concurrent_export_r1", "train_fraud.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_fraud.py", setup=TXN68, env=dict(ENV68),
             action=("shell", "[rank1] epoch 0 batch 39/",
                     "head -c 588000 data/txn-shard-1.bin > ../b68_export.part && cat ../b68_export.part > "
                     "data/txn-shard-1.bin && rm ../b68_export.part; "
                     "echo '  b68: export job rewriting data/txn-shard-1.bin (3000 records written so far)' >&2")),
    Scenario("b68_st_user_quota_edquot_r2", "train_recs.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_recs.py",
             setup=QUOTA68.format(node=2, fill="17M", old="hardneg-0529.npy"),
             teardown="umount /mnt/b68_scratch; rmdir /mnt/b68_scratch", env=dict(ENV68)),
    # node 1's scratch holds 19M of the user's earlier runs (quota 20 MiB)
    Scenario("b68_st_user_quota_preds_jsonl_edquot_r1", "train_intent.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_intent.py",
             setup=QUOTA68.format(node=1, fill="19M", old="intent-preds-1121.jsonl"),
             teardown="umount /mnt/b68_scratch; rmdir /mnt/b68_scratch", env=dict(ENV68)),
    # the checkpoint volume (/mnt/b68_ckpt, a 128 MiB ext4 image, thin: sparse) lives in a storage pool (/mnt/b68_pool,
    # a 24 MiB tmpfs) that is overcommitted: when the pool is full the volume's writes fail although its own df shows
    # free space
    Scenario("b68_st_thin_volume_pool_full_fsync_r0", "train_retrieval.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_retrieval.py",
             setup="mkdir -p /mnt/b68_pool /mnt/b68_ckpt && mount -t tmpfs -o size=24m tmpfs /mnt/b68_pool && "
                   "truncate -s 128M /mnt/b68_pool/ckpt-vol.img && mkfs.ext4 -q -F /mnt/b68_pool/ckpt-vol.img && "
                   "mount -o loop /mnt/b68_pool/ckpt-vol.img /mnt/b68_ckpt",
             teardown="umount /mnt/b68_ckpt; umount /mnt/b68_pool; rmdir /mnt/b68_ckpt /mnt/b68_pool", env=dict(ENV68)),
    # from rank 0's step-100 line the results volume is frozen for 30 s (fsfreeze: the storage team's snapshot job)
    Scenario("b68_hang_fsfreeze_metrics_write_r0", "train_demand.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_demand.py", setup=_vol68("b68_results"),
             teardown="fsfreeze -u /mnt/b68_results 2>/dev/null; " + _unvol68("b68_results"), env=dict(ENV68),
             action=("shell", "rank 0 step 100/300",
                     "fsfreeze -f /mnt/b68_results && echo '  b68: /mnt/b68_results frozen' >&2 && sleep 30; "
                     "fsfreeze -u /mnt/b68_results; echo '  b68: /mnt/b68_results thawed' >&2")),
]

# ---- batch 65 (h217): the first failing rank when every rank, task or node writes its own log file (logs/rank<R>.log,
# worker_<R>/stdout.log, out/node<N>/train.err, torchrun --log-dir trees with @record's error.json, Slurm-like
# slurm-<jobid>_<task>.out, logs/node<N>/rank<R>.log, JSON-lines per rank), with one node's logging clock shifted by
# several seconds on four two-node stand-ins (NTP drift: the script's formatter adds ZOO_CLOCK_OFFSET_S, which the
# recorder sets per node); kinds: a rank SIGKILLed with no traceback while its peers log connection errors; an
# exception on a rank k > 0 while rank 0 logs only the collective timeout; a run whose earliest-stamped error is a
# symptom on the other node; a node's launcher (and both its ranks) killed; a rank stuck in a C call; ids b65_* ----
ENV65 = {"OMP_NUM_THREADS": "1"}
# Slurm-like batch step: each node's share of the job starts one task per rank (srun -o slurm-%j_%t.out style)
SLURM65 = r"""cat > job.sh <<'EOF2'
#!/bin/bash
# one node's share of job 48213: two tasks, each task's stdout+stderr in slurm-<jobid>_<task>.out
NODE=$1
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 SLURM_JOB_ID=48213 SLURM_NTASKS=4 SLURMD_NODENAME=trn-a0$((17 + NODE))
pids=()
for lid in 0 1; do
  t=$((NODE * 2 + lid))
  SLURM_PROCID=$t SLURM_LOCALID=$lid RANK=$t python -u train_seg.py > slurm-48213_$t.out 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
exit $rc
EOF2"""
# each rank's character shard; the corpus was split by document, so the shards differ in length (rank 2's slice is
# the smallest, 43,077 tokens)
TOK65 = r"""mkdir -p tokens && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(65)
for r, n in enumerate([301337, 289954, 43077]):
    base = torch.randint(0, 96, (n,), generator=g)
    base[1::2] = (base[0::2][: len(base[1::2])] * 7 + 3) % 96
    torch.save(base, f"tokens/shard-{r}.pt")
EOF2"""
SCENARIOS += [
    # at rank 2's step-160 line (in its own log file) rank 2 is SIGKILLed from outside (no traceback)
    Scenario("b65_inf_sigkill_r2_rankfiles_4r", "train_ranker.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_ranker.py", env=dict(ENV65),
             keep=("logs/*.log",), action=("kill", 2, signal.SIGKILL, "rank2 INFO step 160/400")),
    # two nodes (tasks 0-1 on node 0, 2-3 on node 1); node 1's clock runs 11.4 s ahead; at task 3's step-120 line task 3
    # is SIGKILLed from outside
    Scenario("b65_inf_sigkill_r3_slurm_task_files_twonode_n1", "train_seg.py", "bash job.sh 0 {port}",
             cmd2="bash job.sh 1 {port}", setup=SLURM65, env=dict(ENV65), env2={"ZOO_CLOCK_OFFSET_S": "11.4"},
             keep=("slurm-*.out",), action=("kill", 3, signal.SIGKILL, "task 3: step 120 ")),
    # no outside action: rank 2's prefetch thread dies on the shard's partial last block; its loop waits forever
    Scenario("b65_hang_prefetch_thread_exc_r2_logdir_record", "train_charlm.py",
             "torchrun --nproc-per-node 3 --master-port {port} --log-dir logs --redirects 3 train_charlm.py",
             setup=TOK65, env=dict(ENV65)),
    # no outside action: rank 3's validation slice has 161 utterances; its last batch of 1 breaks .squeeze()
    Scenario("b65_hang_eval_squeeze_except_r3_worker_dirs", "train_intent.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_intent.py", env=dict(ENV65),
             keep=("worker_*/*.log",)),
]
# each node's launch script (node 0: ranks 0-1, node 1: ranks 2-3), the node's stdout/stderr in out/node<N>/; each
# rank's shard in parts of 40 batches; rank 1's part-003 was cut short by an interrupted copy (first 60 % of its bytes)
OUT65 = r"""cat > launch_node.sh <<'EOF2'
#!/bin/bash
# start this node's two ranks; the node's output goes to out/node<N>/ for the log collector
NODE=$1
mkdir -p out/node$NODE
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 WORLD_SIZE=4 NODE_RANK=$NODE
for lr in 0 1; do
  RANK=$((NODE * 2 + lr)) LOCAL_RANK=$lr python train_tagger.py >> out/node$NODE/train.out 2>> out/node$NODE/train.err &
done
wait
EOF2
python - <<'EOF2'
import os
import torch
g = torch.Generator().manual_seed(65)
w = torch.randn(128, 20, generator=g)
for r in range(4):
    os.makedirs(f"shards/rank{r}", exist_ok=True)
    for p in range(8):
        x = torch.randn(2560, 128, generator=g)
        y = (x @ w > 1.0).float()
        path = f"shards/rank{r}/part-{p:03d}.pt"
        torch.save({"x": x, "y": y}, path)
        if r == 1 and p == 3:
            data = open(path, "rb").read()
            open(path, "wb").write(data[: int(len(data) * 0.6)])
EOF2"""
# each rank's slice of the query log (a topic id per query, 300 batches of 128); rank 3's slice holds a seller's bulk
# catalogue ingest: 1,280 consecutive queries of one topic from query 21,760 (batch 171)
TOPIC65 = r"""mkdir -p data && python - <<'EOF2'
import torch
g = torch.Generator().manual_seed(65)
for r in range(4):
    t = torch.randint(0, 40, (300 * 128,), generator=g)
    if r == 3:
        t[170 * 128:180 * 128] = 7
    torch.save(t, f"data/query-topics-{r}.pt")
EOF2"""
RETR65 = "python train_retrieval.py --node-rank {k} --nproc-per-node 2 --world-size 4"
STATIC65 = ("torchrun --nnodes 2 --node-rank {k} --nproc-per-node 2 --master-addr 127.0.0.1 --master-port {{port}} "
            "--log-dir logs/node{k} --tee 3 train_kws.py")
SCENARIOS += [
    # no outside action: rank 1 (node 0) fails on its truncated part; node 1's clock runs 9.2 s behind, so node 1's
    # connection errors are stamped before the cause
    Scenario("b65_data_part_truncated_r1_clock_skew_out_node_twonode_n0", "train_tagger.py",
             "bash launch_node.sh 0 {port}", cmd2="bash launch_node.sh 1 {port}", setup=OUT65, env=dict(ENV65),
             env2={"ZOO_CLOCK_OFFSET_S": "-9.2"}, keep=("out/node*/*",)),
    # no outside action: rank 3 (node 1) meets a one-topic batch (no negatives for topk); node 1's clock runs 8.3 s ahead
    Scenario("b65_uc_empty_hard_negatives_r3_clock_ahead_spawn_twonode_n1", "train_retrieval.py", RETR65.format(k=0),
             cmd2=RETR65.format(k=1), setup=TOPIC65,
             env={**ENV65, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "{port}"}, env2={"ZOO_CLOCK_OFFSET_S": "8.3"}),
    # at node 0's rank-1 step-200 line node 0 (the head: its torchrun hosts the store) is lost: its agent and both
    # ranks SIGKILLed together
    Scenario("b65_inf_node0_head_lost_logdir_twonode_n0", "train_kws.py", STATIC65.format(k=0),
             cmd2=STATIC65.format(k=1), env=dict(ENV65),
             action=("kill_node", 0, signal.SIGKILL, "node=0 rank=1 step=200 ")),
]
# each node's launch script; the node's name comes from its profile (NODE_NAME)
RUNNODE65 = r"""cat > run_node.sh <<'EOF2'
#!/bin/bash
NODE=$1
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 WORLD_SIZE=4 NODE_RANK=$NODE
for lr in 0 1; do
  RANK=$((NODE * 2 + lr)) LOCAL_RANK=$lr python {file} &
done
wait
EOF2"""
SCENARIOS += [
    # two nodes; node 0's clock runs 4.6 s behind; at the first step-300 line (any rank's file) node 1's launch script and both
    # its ranks are SIGKILLed (the node lost)
    Scenario("b65_inf_node1_launcher_killed_clock_behind_twonode_n1", "train_fraud.py", "bash run_node.sh 0 {port}",
             cmd2="bash run_node.sh 1 {port}", setup=RUNNODE65.replace("{file}", "train_fraud.py"),
             env={**ENV65, "NODE_NAME": "trn-b01", "ZOO_CLOCK_OFFSET_S": "-4.6"},
             env2={"NODE_NAME": "trn-b02", "ZOO_CLOCK_OFFSET_S": "0"}, keep=("logs/*.log",),
             action=("kill_node", 1, signal.SIGKILL, "<INFO> step 300/600 ")),
]
# the team's native tokenizer (C, ctypes): a global lock around the shared vocabulary table; its invalid-UTF-8 path
# returns -1 without unlocking. Each rank's corpus part: 6,000 lines; rank 1's line 1,925 is Latin-1 (a scraped page
# saved in the wrong encoding)
TOKLIB65 = r"""mkdir -p native corpus && cat > native/libtok.c <<'EOF2'
#include <pthread.h>
static pthread_mutex_t vocab_lock = PTHREAD_MUTEX_INITIALIZER;
/* UTF-8 code points hashed into the shared vocabulary; -1 on invalid UTF-8 */
long tok_encode(const unsigned char *s, long n, int *out, long cap) {
    pthread_mutex_lock(&vocab_lock);
    long k = 0;
    for (long i = 0; i < n && k < cap;) {
        unsigned char c = s[i];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > n) return -1;
        for (int j = 1; j < len; j++) if ((s[i + j] & 0xC0) != 0x80) return -1;
        unsigned h = 0;
        for (int j = 0; j < len; j++) h = h * 31u + s[i + j];
        out[k++] = 2 + (int)(h % 7998u);
        i += len;
    }
    pthread_mutex_unlock(&vocab_lock);
    return k;
}
EOF2
gcc -O2 -shared -fPIC -o native/libtok.so native/libtok.c -lpthread
python - <<'EOF2'
import random
random.seed(65)
words = "der die das und zu den nicht von sie ist des sich mit dem für über straße grüße mädchen öffnung".split()
for r in range(3):
    lines = [" ".join(random.choice(words) for _ in range(random.randint(8, 40))) for _ in range(6000)]
    data = [l.encode("utf-8") for l in lines]
    if r == 1:
        data[1924] = "Öffnungszeiten für die Straße: Grüße aus München".encode("latin-1")
    open(f"corpus/part-{r}.txt", "wb").write(b"\n".join(data))
EOF2"""
# node 1's local cache directory still has a process of an earlier job on that node holding the cache build lock (it
# carries ZOO_RUN, so the recorder ends it with the run); each node's run_node.sh stops its other rank when one fails
LOCK65 = r"""cat > run_node.sh <<'EOF2'
#!/bin/bash
# start this node's two ranks, each rank's output in worker_<R>/; when one rank exits with an error, stop the other
NODE=$1
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 WORLD_SIZE=4 NODE_RANK=$NODE
for lr in 0 1; do
  r=$((NODE * 2 + lr))
  mkdir -p worker_$r
  RANK=$r LOCAL_RANK=$lr python train_titles.py > worker_$r/stdout.log 2> worker_$r/stderr.log &
done
wait -n
rc=$?
if [ $rc -ne 0 ]; then
  echo "run_node.sh: node $NODE: a rank exited with status $rc, stopping the others" >&2
  kill $(jobs -p) 2>/dev/null
fi
wait
exit $rc
EOF2
mkdir -p cache/node0 cache/node1
(cd cache/node1 && setsid nohup python3 -c 'import fcntl, time
f = open(".build.lock", "w"); fcntl.flock(f, fcntl.LOCK_EX); time.sleep(600)' > /dev/null 2>&1 &)
sleep 1"""
SCENARIOS += [
    # no outside action: rank 1 deadlocks in the native tokenizer after its invalid line; py-spy dumps of every rank
    # 8 s after rank 1's warning
    Scenario("b65_hang_native_tok_mutex_r1_jsonl_pyspy", "train_bytelm.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_bytelm.py", setup=TOKLIB65, env=dict(ENV65),
             keep=("logs/*.jsonl",), action=("pyspy", '"rank": 1, "level": "WARNING"', 3, 8)),
    # node 1's rank 2 (its local rank 0) blocks in flock on the cache lock a stale process holds; py-spy of every rank
    # 8 s after rank 2 starts building the cache
    Scenario("b65_hang_stale_cache_lock_r2_worker_dirs_pyspy_twonode_n1", "train_titles.py",
             "bash run_node.sh 0 {port}", cmd2="bash run_node.sh 1 {port}", setup=LOCK65,
             env={**ENV65, "LOCAL_CACHE": "cache/node0"}, env2={"LOCAL_CACHE": "cache/node1"},
             keep=("worker_*/*.log",), action=("pyspy", "[r2] building n-gram cache", 4, 8)),
]

# ---- batch 69 (h221): fail-slow with realistic patterns and a clean truth: each step's main cost is a fixed time
# standing for the accelerator's kernels (simgpu69.kernels: a sleep of the nominal kernel time stretched by the GPU's
# current SM clock and by the share of its SMs the job gets), plus a tiny CPU model and a real gloo all-reduce through a
# communication wrapper whose wire time follows the NIC's current effective bandwidth; the fault is the script's own
# periodic work on one rank (x2 on every 5th / every 10th step), a change of the node's state written by the recorder at
# a step line (every NIC's effective bandwidth from a mid-run step: x1.2 / x1.3 on the nominal step; a co-tenant process
# on one GPU from step k to step m: kernels x1.5; one GPU's clock drifting down over 100 steps: kernels x1.0 -> x1.5), or
# the data (one rank's shard turns to 3x larger samples: its 4 DataLoader workers fall behind, a stall every 4 steps);
# two clean controls (one with an evaluation every 50 steps and checkpoint saves, one plain; under clean/); ids b69_* ----
ENV69 = {"OMP_NUM_THREADS": "1"}
# the node's devices as the job sees them (this host has no GPU): simgpu69.py and node/ written by every scenario's setup
SIMGPU69 = r"""mkdir -p node && for r in 0 1 2 3; do mkdir -p node/gpu$r node/nic$r;
echo 1980 > node/gpu$r/sm_clock_mhz; echo 1.0 > node/gpu$r/sm_share; echo 200 > node/nic$r/effective_gbps; done
cat > simgpu69.py <<'EOF2'
'''Stand-in for the node's accelerators and NICs on a host without them: each call takes the time the real work
takes at the rate the node reports now (node/<device>/...). It knows nothing of the job's steps.'''
import os
import time

_NODE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")
FULL_SM_CLOCK_MHZ, FULL_GBPS = 1980.0, 200.0


def _now(device, key, full):
    try:
        with open(os.path.join(_NODE, device, key)) as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return full


def kernels(seconds, device):
    '''`seconds` of kernels at full clock on the whole device; a lower SM clock or a smaller share of the SMs
    (another process on the same GPU) stretches them.'''
    clock = _now(device, "sm_clock_mhz", FULL_SM_CLOCK_MHZ)
    share = _now(device, "sm_share", 1.0)
    time.sleep(seconds * FULL_SM_CLOCK_MHZ / clock / share)


def wire(seconds, nic):
    '''A transfer that takes `seconds` at the NIC's full bandwidth (less when the fabric is congested).'''
    time.sleep(seconds * FULL_GBPS / _now(nic, "effective_gbps", FULL_GBPS))
EOF2"""


def _node69(what: str, files: str, value: str) -> str:
    """The recorder's outside action: the node's state changes (a message on the recorder's stderr only)."""
    # written to a temporary file and renamed: a reader never sees the file empty
    return f"for f in {files}; do echo {value} > node/$f.tmp && mv node/$f.tmp node/$f; done; echo '  b69: {what}' >&2"


def _until69(line: str, then: str, limit_s: int = 80) -> str:
    """Wait (at most limit_s) for a line fragment in the console, then run `then` (the state set back)."""
    frag = line.replace("'", "'\\''")
    return (f"for i in $(seq {limit_s * 20}); do grep -qF -- '{frag}' console.log && break; sleep 0.05; done; "
            f"{then}")


# one GPU's clock drifting down (thermal throttling as the heat sink saturates): from the first rank-0 line of step
# `k` on, the clock is set for each new step N to 1980 / (1 + 0.5 * min(1, (N - k) / 100)): kernels x1.0 -> x1.5 over
# 100 steps, then held; the step is read from rank 0's console lines (the ranks are in lockstep); each value is written
# to a temporary file and renamed (a truncating write let a kernel call read an empty file: the first recording)
DRIFT69 = r"""python3 - <<'EOF2'
import os, re, time
pat, k, gpu, t_end = re.compile(r"{pat}"), {k}, "{gpu}", time.time() + 80
last = None
while time.time() < t_end:
    steps = [int(m.group(1)) for m in pat.finditer(open("console.log", errors="replace").read())]
    n = max(steps) if steps else 0
    if n >= {last_step}:
        break
    if n >= k and n != last:
        f = 1 + 0.5 * min(1.0, (n + 1 - k) / 100)
        open(f"node/{{gpu}}/sm_clock_mhz.tmp", "w").write(f"{{1980 / f:.1f}}\n")
        os.replace(f"node/{{gpu}}/sm_clock_mhz.tmp", f"node/{{gpu}}/sm_clock_mhz")  # atomic: a reader never sees it empty
        last = n
    time.sleep(0.02)
EOF2
echo '  b69: drift done' >&2"""
# tile shards for the land-cover run: each rank's index lists 1,800 tiles of 1.0 MP; rank 1's shard (another region's
# export) holds 3.0 MP tiles from tile 800 (batch 101 at 8 tiles per batch) on
TILES69 = SIMGPU69 + r"""
mkdir -p data && python - <<'EOF2'
import numpy as np
for r in range(3):
    mp = np.full(1800, 1.0)
    if r == 1:
        mp[800:] = 3.0
    np.save(f"data/shard-{r}.npy", mp)
EOF2"""
SCENARIOS += [
    # no outside action: rank 1 holds the hard-negative bank and re-mines it every 5 steps after step 60 (0.18 s more
    # kernels on those steps: its step x2), the other ranks wait for it in the all-reduce
    Scenario("b69_slow_uc_hardneg_every5_r1_feed", "train_search.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_search.py", setup=SIMGPU69, env=dict(ENV69)),
    # no outside action: after step 80 the last rank (3) builds gradient histograms every 10 steps (0.16 s more
    # kernels on those steps: x2)
    Scenario("b69_slow_uc_gradhist_every10_r3_mmcv", "train_defectseg.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_defectseg.py", setup=SIMGPU69, env=dict(ENV69)),
    # from rank 0's step-123 record (a step drawn at random in 80-140) every NIC's effective bandwidth is 100 of 200
    # Gb/s (another job's traffic on the shared spine): the comm wrapper's wire time 0.04 -> 0.08 s, the nominal
    # 0.20 s step x1.2
    Scenario("b69_slow_net_congestion_job_x12_jsonl_feed", "train_twotower.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_twotower.py", setup=SIMGPU69, env=dict(ENV69),
             action=("shell", '"rank": 0, "step": 123, ',
                     _node69("fabric congestion: nic0-2 effective 200 -> 100 Gb/s",
                             "nic0/effective_gbps nic1/effective_gbps nic2/effective_gbps", "100"))),
    # from rank 0's iter-82 line (drawn at random in 80-140) both NICs at 80 Gb/s effective: wire 0.04 -> 0.10 s,
    # the nominal 0.20 s step x1.3
    Scenario("b69_slow_net_congestion_job_x13_nanogpt", "train.py",
             "torchrun --standalone --nproc-per-node 2 train.py", setup=SIMGPU69, env=dict(ENV69),
             action=("shell", "iter 82: ",
                     _node69("fabric congestion: nic0-1 effective 200 -> 80 Gb/s",
                             "nic0/effective_gbps nic1/effective_gbps", "80"))),
    # from rank 2's batch-88 line to its batch-148 line another process shares GPU 2 (the job gets 2/3 of its SMs:
    # kernels x1.5), then it ends and the GPU is the job's alone again
    Scenario("b69_slow_inf_gpu_cotenant_r2_k90_m150_feed", "train_tagger.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_tagger.py", setup=SIMGPU69, env=dict(ENV69),
             action=("shell", "rank 2 | epoch 0 | batch 88/200 |",
                     _node69("co-tenant on gpu2: sm share 1.0 -> 0.667", "gpu2/sm_share", "0.667") + "; " +
                     _until69("rank 2 | epoch 0 | batch 148/200 |",
                              _node69("co-tenant on gpu2 gone: sm share 1.0", "gpu2/sm_share", "1.0")))),
    # from rank 0's step-50 line GPU 1's clock drifts down step by step (thermal throttling): kernels x1.0 -> x1.5
    # over steps 51-150, then held at x1.5 to the end
    Scenario("b69_slow_gpu_thermal_drift_r1_accel_feed", "train_invoice.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_invoice.py", setup=SIMGPU69, env=dict(ENV69),
             action=("shell", "INFO:__main__:step 50 |",
                     DRIFT69.format(pat=r"INFO:__main__:step (\d+) \|", k=50, gpu="gpu1", last_step=200))),
    # no outside action: rank 1's shard holds 3x larger tiles from batch 101 on; its 4 loader workers fall behind
    Scenario("b69_slow_data_large_samples_r1_loader_stall", "train_landcover.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_landcover.py", setup=TILES69, env=dict(ENV69)),
    # clean controls (clean/runs/): validation every 50 iterations and checkpoints every 100; a plain run with a feed
    Scenario("b69_clean_eval50_ckpt_mmengine", "train_intent.py",
             "torchrun --nproc-per-node 2 --master-port {port} train_intent.py", setup=SIMGPU69, env=dict(ENV69),
             clean=True),
    Scenario("b69_clean_plain_feed", "train_iqa.py",
             "torchrun --nproc-per-node 3 --master-port {port} train_iqa.py", setup=SIMGPU69, env=dict(ENV69),
             clean=True),
]
SCENARIOS += [
    # from rank 0's step=60 line GPU 3's clock drifts down step by step (thermal throttling): kernels x1.0 -> x1.5
    # over steps 61-160, then held to the end; every rank logs logfmt, no feed
    Scenario("b69_slow_gpu_thermal_drift_r3_4r_logfmt", "train_churn.py",
             "torchrun --nproc-per-node 4 --master-port {port} train_churn.py", setup=SIMGPU69, env=dict(ENV69),
             action=("shell", " rank=0 step=60 ",
                     DRIFT69.format(pat=r" rank=0 step=(\d+) ", k=60, gpu="gpu3", last_step=200))),
]
