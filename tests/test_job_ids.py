"""One job-id rule for every interface: the alphabet, and the id a file or folder name gives."""

from __future__ import annotations

import re

import pytest

from diag_service.domain import JOB_ID_PATTERN, is_job_id, job_id_from_name
from diag_service.service.uploads import job_id_from_name as upload_job_id


@pytest.mark.parametrize(("name", "job"), [
    ("job-42.tar.gz", "job-42"),
    ("/data/bundles/run7/", "run7"),
    ("llama70b-pretrain_attempt3.log.gz", "llama70b-pretrain_attempt3"),
    ("slurm-4817236.out", "slurm-4817236"),
    ("ray_job raysubmit_Kc7x (copy).zip", "ray_job_raysubmit_Kc7x_copy"),
    ("C:\\Users\\user\\Downloads\\trainer-worker-0.txt", "trainer-worker-0"),
])
def test_a_name_gives_one_job_id_everywhere(name: str, job: str) -> None:
    assert job_id_from_name(name) == job
    assert upload_job_id(name) == job  # the upload path uses the same rule on the client's file name
    assert re.match(JOB_ID_PATTERN, job) and is_job_id(job)


def test_the_alphabet_takes_namespaced_ids_and_refuses_path_tricks() -> None:
    assert is_job_id("ml-team/llama-70b-sft") and is_job_id("4817236.0") and is_job_id("raysubmit_Kc7x@cluster-a")
    assert not is_job_id("../etc") and not is_job_id("a/../../b") and not is_job_id("-rf") and not is_job_id("")
    assert job_id_from_name("...") == "upload" and job_id_from_name(".tar.gz", default="job") == "job"
