"""The dashboard in a browser, against the production profile (two replicas behind one
URL, auth on, the page signed in as the operator): a job's stages run (by plain HTTP
calls with a worker's token, as a worker's would) while the page follows them; an
approval, a pause and resume, and an abort made with the page's buttons. Screenshots of
the jobs list and of a job page go to build/screenshots/."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from ..support.api import unique
from ..support.deployment import Deployment
from ..support.processes import ROOT, stop

pytestmark = pytest.mark.e2e

SHOTS = ROOT / "build" / "screenshots"
WAIT = 10_000  # ms: a change shows within a refresh (2 s) or on the action's own reload


def create_job(http: httpx.Client, stages: list[dict[str, Any]]) -> dict[str, Any]:
    answer = http.post("/v1/jobs", json={"name": unique("dash"), "data": {}, "stages": stages})
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


def one_task_job(dashboard: Deployment, stage_type: str) -> dict[str, Any]:
    """A job of one stage of `stage_type` holding one task, made by the producer."""
    with producer(dashboard) as http:
        return create_job(http, [{"type": stage_type, "data": {}, "tasks": [{"data": {}}]}])


def producer(dashboard: Deployment) -> httpx.Client:
    return httpx.Client(base_url=dashboard.url, timeout=10, headers=dashboard.headers("producer"))


def run_tasks(dashboard: Deployment, stage_type: str, n: int) -> None:
    """Claim and complete `n` tasks of the stage type, as its worker."""
    with as_worker(dashboard, stage_type) as http:
        _run_tasks(http, stage_type, n)


def as_worker(dashboard: Deployment, stage_type: str) -> httpx.Client:
    """A client with the stage type's worker token, as its worker's would be."""
    token = dashboard.worker_token(stage_type)
    return httpx.Client(
        base_url=dashboard.url, timeout=10, headers={"authorization": f"Bearer {token}"}
    )


def fail_one(http: httpx.Client, stage_type: str, reason: str) -> dict[str, Any]:
    """Claim a task of the stage type and report it FAILED with `reason`; the task."""
    task: dict[str, Any] = http.patch(
        f"/v1/stages/{stage_type}/tasks/dequeue", params={"worker": "w-2"}
    ).json()
    failed = http.put(
        f"/v1/tasks/{task['id']}/status",
        json={"status": "FAILED", "leaseId": task["leaseId"], "reason": reason},
    )
    assert failed.status_code == 200, failed.text
    return failed.json()  # type: ignore[no-any-return]


def _run_tasks(http: httpx.Client, stage_type: str, n: int) -> None:
    for _ in range(n):
        claimed = http.patch(f"/v1/stages/{stage_type}/tasks/dequeue", params={"worker": "w-1"})
        assert claimed.status_code == 200, claimed.text
        task = claimed.json()
        done = http.put(
            f"/v1/tasks/{task['id']}/status",
            json={"status": "COMPLETED", "leaseId": task["leaseId"], "result": {"ok": True}},
        )
        assert done.status_code == 200, done.text


def confirm(page) -> None:  # type: ignore[no-untyped-def]
    dialog = page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    dialog.locator("#confirm-ok").click()
    expect(dialog).to_be_hidden()


def stage_status(page, order: int):  # type: ignore[no-untyped-def]
    return page.locator(f'[data-stage-order="{order}"] .stage-status')


def test_a_job_followed_approved_and_completed_on_the_page(
    signed_in, dashboard: Deployment
) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    SHOTS.mkdir(parents=True, exist_ok=True)
    with producer(dashboard) as http:
        tasks = [{"data": {"i": i}} for i in range(3)]
        job = create_job(
            http,
            [
                {"type": "T1", "data": {}, "tasks": tasks},
                {"type": "T2", "data": {}, "startAsWaiting": True, "tasks": tasks[:2]},
            ],
        )
        page.goto(f"{dashboard.url}/ui")
        page.get_by_label("Name").fill(job["name"][-8:].upper())  # part of it, any case
        page.get_by_role("button", name="Search").click()
        link = page.get_by_role("link", name=job["name"])
        expect(link).to_be_visible(timeout=WAIT)
        expect(page.locator("main tbody tr")).to_have_count(1)
        page.screenshot(path=str(SHOTS / "jobs-list.png"), full_page=True)
        link.click()

        expect(page.get_by_role("heading", level=1)).to_have_text(job["name"], timeout=WAIT)
        expect(stage_status(page, 2)).to_have_text("WAITING")
        approve = page.get_by_role("button", name="Approve stage 2")
        expect(approve).to_have_count(0)  # not its turn yet
        run_tasks(dashboard, "T1", 3)
        expect(stage_status(page, 1)).to_have_text("COMPLETED", timeout=WAIT)
        expect(page.locator('[data-stage-order="1"] progress')).to_have_attribute("value", "100")

        expect(approve).to_be_visible(timeout=WAIT)
        approve.click()
        confirm(page)
        expect(stage_status(page, 2)).to_have_text("PENDING", timeout=WAIT)
        run_tasks(dashboard, "T2", 2)
        expect(page.locator("#job-status")).to_have_text("COMPLETED", timeout=WAIT)
        expect(page.locator("#job-progress")).to_contain_text("100 %")
        expect(stage_status(page, 2)).to_have_text("COMPLETED")
        page.get_by_role("button", name="Tasks of stage 2").click()
        expect(page.locator("#tasks-heading")).to_have_text("Tasks of stage 2 (2)")
        expect(page.get_by_role("cell", name="w-1").first).to_be_visible()
        expect(page.locator("#events-heading")).to_contain_text("events")
        page.screenshot(path=str(SHOTS / "job-page.png"), full_page=True)


def test_pause_resume_and_abort_with_the_buttons(signed_in, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    with producer(dashboard) as http:
        one = [{"data": {}}]
        paused = create_job(http, [{"type": "T3", "data": {}, "tasks": one}])
        aborted = create_job(
            http,
            [{"type": "T4", "data": {}, "tasks": one}, {"type": "T5", "data": {}, "tasks": one}],
        )

        # The list opens on the newest job.
        page.goto(f"{dashboard.url}/ui")
        first_row = page.locator("main tbody tr").first
        expect(first_row).to_have_attribute("data-job-id", aborted["id"], timeout=WAIT)
        # Found by the first digits of its id, as the page shows ids.
        page.get_by_label("Id").fill(paused["id"][:8])
        page.get_by_role("button", name="Search").click()
        expect(page.locator("main tbody tr")).to_have_count(1, timeout=WAIT)
        expect(first_row).to_have_attribute("data-job-id", paused["id"])

        page.goto(f"{dashboard.url}/ui#/jobs/{paused['id']}")
        expect(page.locator("#job-status")).to_have_text("PENDING", timeout=WAIT)
        page.get_by_role("button", name="Pause").click()
        confirm(page)
        expect(page.locator("#job-status")).to_have_text("PAUSED", timeout=WAIT)
        page.get_by_role("button", name="Resume").click()
        confirm(page)
        expect(page.locator("#job-status")).to_have_text("PENDING", timeout=WAIT)
        assert http.get(f"/v1/jobs/{paused['id']}").json()["status"] == "PENDING"
        # Its history newest first: the resume heads it.
        history = page.locator('section[aria-labelledby="events-heading"] tbody tr')
        expect(history.first).to_contain_text("PAUSED → PENDING", timeout=WAIT)

        # A dismissed confirmation changes nothing.
        page.get_by_role("button", name="Abort").click()
        page.locator("dialog#confirm").get_by_role("button", name="Cancel").click()
        expect(page.locator("#job-status")).to_have_text("PENDING")

        page.goto(f"{dashboard.url}/ui#/jobs/{aborted['id']}")
        expect(page.get_by_role("heading", level=1)).to_have_text(aborted["name"], timeout=WAIT)
        page.get_by_role("button", name="Abort").click()
        confirm(page)
        expect(page.locator("#job-status")).to_have_text("ABORTED", timeout=WAIT)
        expect(stage_status(page, 1)).to_have_text("ABORTED")
        expect(stage_status(page, 2)).to_have_text("ABORTED")
        expect(page.get_by_role("button", name="Abort")).to_have_count(0)


def test_a_failed_job_says_why_opens_on_its_failed_stage_and_is_retried_then_deleted(
    signed_in, dashboard: Deployment
) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    with producer(dashboard) as http:
        job = create_job(
            http,
            [
                {"type": "T7", "data": {}, "tasks": [{"data": {}}]},
                {"type": "T8", "data": {}, "tasks": [{"data": {"tile": [3, 4]}, "maxAttempts": 1}]},
            ],
        )
        run_tasks(dashboard, "T7", 1)
        with as_worker(dashboard, "T8") as worker:
            task = fail_one(worker, "T8", "tile missing")

        page.goto(f"{dashboard.url}/ui#/jobs/{job['id']}")
        expect(page.locator("#job-status")).to_have_text("FAILED", timeout=WAIT)
        why = page.locator("#job-reason")
        expect(why).to_contain_text("tile missing")
        expect(why).to_contain_text("stage 2 (T8)")
        expect(why).to_contain_text(task["id"][:8])
        # Opened on the stage that failed it, its task's input shown.
        expect(page.locator("#tasks-heading")).to_have_text("Tasks of stage 2 (1)")
        expect(page.get_by_role("cell", name='{"tile":[3,4]}')).to_be_visible()

        page.get_by_role("button", name="Retry").click()
        confirm(page)
        expect(page.locator("#job-status")).not_to_have_text("FAILED", timeout=WAIT)
        expect(page.locator("#job-reason")).to_have_count(0)
        run_tasks(dashboard, "T8", 1)
        expect(page.locator("#job-status")).to_have_text("COMPLETED", timeout=WAIT)

        page.get_by_role("button", name="Delete").click()
        confirm(page)
        expect(page.get_by_role("heading", level=1)).to_have_text("Jobs", timeout=WAIT)
        assert http.get(f"/v1/jobs/{job['id']}").status_code == 404


def test_an_api_refusal_is_shown_as_the_api_words_it(signed_in, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    job = one_task_job(dashboard, "T6")
    with producer(dashboard) as http:
        page.goto(f"{dashboard.url}/ui#/jobs/{job['id']}")
        expect(page.locator("#job-status")).to_have_text("PENDING", timeout=WAIT)
        page.get_by_label("Live refresh").uncheck()  # the page still offers Pause...
        aborted = http.put(f"/v1/jobs/{job['id']}/status", json={"status": "ABORTED"})
        assert aborted.status_code == 200, aborted.text
        page.get_by_role("button", name="Pause").click()  # ...which the API now refuses
        confirm(page)
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("Illegal status transition from ABORTED to PAUSED")
        expect(alert).to_contain_text("ILLEGAL_JOB_STATUS_TRANSITION")
        expect(page.locator("#job-status")).to_have_text("ABORTED")


def test_with_auth_on_the_page_asks_for_a_token_and_keeps_it_in_the_tab(  # type: ignore[no-untyped-def]
    page, dashboard: Deployment
) -> None:
    token = dashboard.token("operator")
    job = one_task_job(dashboard, "T7")
    page.goto(f"{dashboard.url}/ui")
    dialog = page.locator("dialog#token-dialog")
    expect(dialog).to_be_visible(timeout=WAIT)
    expect(page.get_by_role("alert")).to_contain_text("a bearer token is required")
    page.get_by_label("Bearer token").fill("jnk_wrong")
    dialog.get_by_role("button", name="Use token").click()
    expect(dialog.get_by_role("alert")).to_have_text("the token is not valid", timeout=WAIT)
    page.get_by_label("Bearer token").fill(token)
    dialog.get_by_role("button", name="Use token").click()
    expect(page.get_by_role("link", name=job["name"])).to_be_visible(timeout=WAIT)
    assert page.evaluate("sessionStorage.getItem('jobnik.token')") == token
    assert page.evaluate("localStorage.length") == 0


def test_the_stage_types_page_shows_the_queues(signed_in, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    with producer(dashboard) as http:
        create_job(http, [{"type": "T8", "data": {}, "tasks": [{"data": {}}] * 3}])
    worker = {"authorization": f"Bearer {dashboard.worker_token('T8')}"}
    with httpx.Client(base_url=dashboard.url, timeout=10, headers=worker) as http:
        claimed = http.patch("/v1/stages/T8/tasks/dequeue")
        assert claimed.status_code == 200, claimed.text
    page.goto(f"{dashboard.url}/ui")
    page.get_by_role("link", name="Stage types").click()
    row = page.locator('tr[data-stage-type="T8"]')
    expect(row.locator(".waiting")).to_have_text("2", timeout=WAIT)
    expect(row.locator(".in-flight")).to_have_text("1")
    # Paused from the page: nothing of its type is handed out until it is resumed.
    page.get_by_role("button", name="Pause T8").click()
    confirm(page)
    expect(row.locator(".paused")).to_have_text("PAUSED", timeout=WAIT)
    with httpx.Client(base_url=dashboard.url, timeout=10, headers=worker) as http:
        assert http.patch("/v1/stages/T8/tasks/dequeue").status_code == 404
        page.get_by_role("button", name="Resume T8").click()
        confirm(page)
        expect(row.locator(".paused")).to_have_text("—", timeout=WAIT)
        assert http.patch("/v1/stages/T8/tasks/dequeue").status_code == 200
    expect(row.locator(".limits")).to_have_text("—")
    operator = {"authorization": f"Bearer {dashboard.token('operator')}"}
    limits = {"maxInFlight": 2, "ratePerSecond": 5}
    with httpx.Client(base_url=dashboard.url, timeout=10, headers=operator) as http:
        assert http.put("/v1/stage-types/T8/limits", json=limits).status_code == 200
    expect(row.locator(".limits")).to_have_text("2 in flight, 5/s (burst 5)", timeout=WAIT)


def test_a_stage_types_flow_over_the_last_hour_is_drawn_and_listed(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    with producer(dashboard) as http:
        create_job(
            http,
            [{"type": "T9", "data": {}, "allowedFailures": 1, "tasks": [{"data": {}}] * 4}],
        )
    run_tasks(dashboard, "T9", 2)
    with as_worker(dashboard, "T9") as http:
        fail_one(http, "T9", "tile off the map")
    page.goto(f"{dashboard.url}/ui#/stage-types")
    page.locator('tr[data-stage-type="T9"]').get_by_role("link", name="T9").click()
    expect(page.get_by_role("heading", name="Stage type T9")).to_be_visible(timeout=WAIT)
    chart = page.get_by_role("img", name="Tasks of T9 a minute over 61 minutes")
    expect(chart).to_have_attribute(
        "aria-label",
        "Tasks of T9 a minute over 61 minutes: 4 created, 2 completed, 1 failed, 0 retried",
    )
    expect(chart.locator("rect.flow-completed").first).to_be_visible()
    assert chart.locator("rect.flow-retried").count() == 0
    # The minutes with moves, newest first (one, or two across a minute's turn).
    rows = page.locator("tr[data-minute]")
    expect(rows.first).to_be_visible()
    cells = [
        [int(t) for t in rows.nth(i).locator("td").all_inner_texts()] for i in range(rows.count())
    ]
    assert [sum(column) for column in zip(*cells, strict=True)] == [4, 2, 1, 0], cells
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "stage-type-flow.png"), full_page=True)
    page.get_by_role("link", name="← All stage types").click()
    expect(page.locator('tr[data-stage-type="T9"]')).to_be_visible(timeout=WAIT)


def test_times_in_utc_or_the_local_zone_with_who_did_what_and_how_long_it_took(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    job = one_task_job(dashboard, "T10")
    run_tasks(dashboard, "T10", 1)
    page.goto(f"{dashboard.url}/ui#/jobs/{job['id']}")
    expect(page.locator("#job-status")).to_have_text("COMPLETED", timeout=WAIT)
    history = page.locator('section[aria-labelledby="events-heading"] tbody tr')
    created = history.filter(has_text="JOB").last  # newest first: the creation is last
    expect(created.locator("td.by")).to_have_text("producer")  # the token that made it
    completed = history.filter(has_text="IN_PROGRESS → ").filter(has_text="TASK").first
    expect(completed.locator("td.by")).to_have_text("worker-T10")
    created_at = created.locator("time").first
    expect(created_at).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
    page.get_by_role("button", name="Tasks of stage 1").click()
    expect(page.locator("td.took").first).to_have_text(re.compile(r"^\d+\.\d s$"))

    page.get_by_label("Times").select_option("local")
    expect(created_at).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$"))
    # The choice stays with this browser.
    page.reload()
    expect(page.get_by_label("Times")).to_have_value("local", timeout=WAIT)
    assert page.evaluate("localStorage.getItem('jobnik.zone')") == "local"


def test_a_jobs_deadline_and_expiry_are_shown_with_it(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    times = {"deadline": "2099-01-02T03:04:05Z", "expiresAt": "2099-01-01T00:00:00Z"}
    with producer(dashboard) as http:
        made = http.post("/v1/jobs", json={"name": unique("timed"), "data": {}, **times})
        assert made.status_code == 201, made.text
    page.goto(f"{dashboard.url}/ui#/jobs/{made.json()['id']}")
    expect(page.locator("#job-deadline")).to_have_text("2099-01-02 03:04:05 UTC", timeout=WAIT)
    expect(page.locator("#job-expires")).to_have_text("2099-01-01 00:00:00 UTC")


def test_a_jobs_result_and_assets_are_shown_with_the_job(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    job = one_task_job(dashboard, "T13")
    # A job without outputs shows no such section.
    page.goto(f"{dashboard.url}/ui#/jobs/{job['id']}")
    expect(stage_status(page, 1)).to_have_text("PENDING", timeout=WAIT)
    expect(page.locator("#outputs-heading")).to_have_count(0)
    with as_worker(dashboard, "T13") as http:
        task = http.patch("/v1/stages/T13/tasks/dequeue").json()
        lease = {"leaseId": task["leaseId"]}
        assets = [
            {
                "type": "tile-pyramid",
                "uri": "https://tiles.example/run-13/",
                "sizeBytes": 5 * 2**20,
            },
            {"type": "report", "uri": "/exports/run-13.pdf", "name": "summary"},
        ]
        added = http.post(f"/v1/tasks/{task['id']}/assets", json={**lease, "assets": assets})
        assert added.status_code == 201, added.text
        result = {"tiles": 1365, "levels": [0, 5]}
        put = http.put(f"/v1/tasks/{task['id']}/job-result", json={**lease, "result": result})
        assert put.status_code == 200, put.text
    page.reload()
    expect(page.locator("#outputs-heading")).to_have_text("What it produced", timeout=WAIT)
    assert json.loads(page.locator("#job-result").inner_text()) == result
    rows = page.locator("#outputs tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("tile-pyramid")
    expect(rows.nth(0)).to_contain_text("5.0 MiB")
    link = rows.nth(0).get_by_role("link", name="https://tiles.example/run-13/")
    expect(link).to_have_attribute("href", "https://tiles.example/run-13/")
    expect(rows.nth(1)).to_contain_text("summary")
    # A path is shown, not linked.
    expect(rows.nth(1).get_by_role("link")).to_have_count(0)


def test_dead_letters_are_listed_retried_and_discarded_from_the_page(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    retried = one_task_job(dashboard, "T14")
    dropped = one_task_job(dashboard, "T14")
    with as_worker(dashboard, "T14") as http:
        first = fail_one(http, "T14", "tile server 502")
        second = fail_one(http, "T14", "bad input")
    page.goto(f"{dashboard.url}/ui")
    page.get_by_role("link", name="Dead letters").click()
    expect(page.get_by_role("heading", name="Dead letters")).to_be_visible(timeout=WAIT)
    row_first = page.locator(f'tr[data-task-id="{first["id"]}"]')
    row_second = page.locator(f'tr[data-task-id="{second["id"]}"]')
    expect(row_first).to_contain_text("tile server 502", timeout=WAIT)
    expect(row_second).to_contain_text("bad input")
    expect(row_first.get_by_role("link", name=retried["name"])).to_be_visible()
    page.screenshot(path=str(SHOTS / "dead-letters.png"), full_page=True)

    row_first.get_by_role("button", name="Retry").click()
    confirm(page)
    expect(row_first).to_have_count(0, timeout=WAIT)
    row_second.get_by_role("button", name="Discard").click()
    confirm(page)
    expect(row_second).to_have_count(0, timeout=WAIT)
    with producer(dashboard) as http:
        assert http.get(f"/v1/jobs/{retried['id']}").json()["status"] == "IN_PROGRESS"
        assert http.get(f"/v1/jobs/{dropped['id']}").json()["status"] == "FAILED"


POLICY = {
    "initialDelaySeconds": 0,
    "multiplier": 3,
    "maxDelaySeconds": 60,
    "jitter": 0.2,
    "nonRetryableErrors": ["ValidationError", "KeyError"],
}


def test_schedules_are_listed_run_now_paused_resumed_and_deleted_from_the_page(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    name = f"dash-{uuid.uuid4().hex[:8]}"
    body = {"cron": "0 2 * * *", "timezone": "Europe/Berlin", "job": {"name": name, "data": {}}}
    with producer(dashboard) as http:
        made = http.put(f"/v1/schedules/{name}", json=body)
        assert made.status_code == 201, made.text
    page.goto(f"{dashboard.url}/ui#/schedules")
    row = page.locator(f'tr[data-schedule="{name}"]')
    expect(row.locator(".timing")).to_have_text("0 2 * * * (Europe/Berlin)", timeout=WAIT)
    expect(row.locator(".runs")).to_have_text("0")

    page.get_by_role("button", name=f"Run {name} now").click()
    confirm(page)
    made_job = page.get_by_role("status").get_by_role("link")
    expect(made_job).to_be_visible(timeout=WAIT)
    expect(row.locator(".runs")).to_have_text("1", timeout=WAIT)
    made_job.click()
    expect(page.locator("#job-status")).to_have_text("PENDING", timeout=WAIT)
    expect(page.locator("h1")).to_contain_text(name)

    page.goto(f"{dashboard.url}/ui#/schedules")
    page.get_by_role("button", name=f"Pause {name}").click()
    confirm(page)
    expect(row.locator(".next")).to_have_text("PAUSED", timeout=WAIT)
    page.get_by_role("button", name=f"Resume {name}").click()
    confirm(page)
    expect(row.locator(".next")).not_to_have_text("PAUSED", timeout=WAIT)
    page.get_by_role("button", name=f"Delete {name}").click()
    confirm(page)
    expect(row).to_have_count(0, timeout=WAIT)


def test_a_jobs_timeline_shows_its_stages_and_each_task_run_with_the_retry(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    tasks = [{"data": {"i": i}, "maxAttempts": 2} for i in range(2)]
    with producer(dashboard) as http:
        job = create_job(
            http,
            [
                {"type": "T11", "data": {}, "tasks": tasks, "retryPolicy": POLICY},
                {"type": "T12", "data": {}, "tasks": tasks[:1]},
            ],
        )
    with as_worker(dashboard, "T11") as http:
        first = fail_one(http, "T11", "tile server busy")
        assert first["status"] == "RETRIED"
        _run_tasks(http, "T11", 2)  # the other task, and the first one's second attempt
    page.goto(f"{dashboard.url}/ui#/jobs/{job['id']}")
    expect(stage_status(page, 1)).to_have_text("COMPLETED", timeout=WAIT)
    expect(page.locator('[data-stage-order="1"] .retry-policy')).to_have_text(
        "Retries: wait 0 s, 3 times longer each time, at most 1 min 0 s; jitter 20 %; "
        "never retried: ValidationError, KeyError"
    )
    expect(page.locator('[data-stage-order="2"] .retry-policy')).to_have_count(0)
    page.get_by_text("Timeline: stages and task runs over time").click()
    chart = page.locator("svg.timeline")
    expect(chart).to_be_visible(timeout=WAIT)
    lane = chart.locator('g[data-stage-order="1"]')
    expect(lane.locator("rect.tl-run")).to_have_count(3)  # two tasks, one of them twice
    expect(lane.locator("rect.tl-run.tl-RETRIED")).to_have_count(1)
    expect(lane.locator(f'rect.tl-RETRIED[data-task-id="{first["id"]}"] title')).to_contain_text(
        "tile server busy"
    )
    expect(lane.locator("rect.tl-bar.tl-COMPLETED")).to_have_count(1)
    # The second stage has not started: a waiting lane, no runs.
    second = chart.locator('g[data-stage-order="2"]')
    expect(second.locator("rect.tl-wait")).to_have_count(1)
    expect(second.locator("rect.tl-run")).to_have_count(0)
    expect(chart).to_have_attribute(
        "aria-label", re.compile(r"^Timeline of 2 stages and 3 task runs")
    )
    page.locator("#timeline").screenshot(path=str(SHOTS / "timeline.png"))


def test_the_workers_page_lists_live_workers_and_drops_one_that_stopped(  # type: ignore[no-untyped-def]
    signed_in, dashboard: Deployment
) -> None:
    page = signed_in
    tiles, exports = (
        dashboard.start_worker("W1", name="tiler-1"),
        dashboard.start_worker("W2", name="exporter-1"),
    )
    try:
        page.goto(f"{dashboard.url}/ui")
        page.get_by_role("link", name="Workers").click()
        expect(page.get_by_role("heading", name="Workers")).to_be_visible(timeout=WAIT)
        tiler, exporter = (
            page.locator(f'tr[data-worker="{n}"]') for n in ("tiler-1", "exporter-1")
        )
        expect(tiler).to_be_visible(timeout=20_000)  # the worker process starts first
        expect(exporter).to_be_visible(timeout=20_000)
        expect(tiler.locator("td").first).to_have_text("W1")
        expect(tiler.locator("td").last).to_have_text("worker-W1")  # its token's name
        expect(exporter.locator(".in-flight")).to_have_text("0")
        page.screenshot(path=str(SHOTS / "workers.png"), full_page=True)
        stop(exports)
        # Gone once its last claim is older than the window (15 s here), at a refresh.
        expect(exporter).to_have_count(0, timeout=30_000)
        expect(tiler).to_be_visible()
    finally:
        stop(tiles)
        stop(exports)


def test_usable_by_keyboard_and_at_375_px(signed_in, dashboard: Deployment) -> None:  # type: ignore[no-untyped-def]
    page = signed_in
    job = one_task_job(dashboard, "T9")
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"{dashboard.url}/ui")
    expect(page.get_by_role("heading", name="Jobs")).to_be_visible(timeout=WAIT)
    page.get_by_label("Name").focus()
    page.keyboard.type(job["name"])
    page.keyboard.press("Enter")  # the filters are a form
    link = page.get_by_role("link", name=job["name"])
    expect(link).to_be_visible(timeout=WAIT)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    link.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text(job["name"], timeout=WAIT)
    pause = page.get_by_role("button", name="Pause")
    pause.focus()
    page.keyboard.press("Enter")
    expect(page.locator("dialog#confirm")).to_be_visible()
    page.keyboard.press("Escape")  # cancels
    expect(page.locator("dialog#confirm")).to_be_hidden()
    expect(page.locator("#job-status")).to_have_text("PENDING")
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 375, f"the page is {wide} px wide at 375 px"
