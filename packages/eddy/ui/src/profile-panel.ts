/** The CPU profile tab: a worker thread's profile for a few seconds (POST /v1/job/profile), drawn as a flame graph. */
import { post } from "./api.ts";
import { describe, h } from "./dom.ts";
import { flameGraph, type ThreadProfile } from "./flame.ts";
import { formatDuration } from "./format.ts";

export function profilePanel(panel: HTMLElement): void {
  const threadInput = h("input", { id: "profile-thread", type: "number", min: "0", value: "0" });
  const secondsInput = h("input", { id: "profile-seconds", type: "number", min: "1", max: "30", value: "5" });
  const profileButton = h("button", { type: "submit", id: "profile-start" }, "Profile");
  const profileForm = h("form", { class: "lookup" }, h("label", {}, "Worker thread ", threadInput), h("label", {}, "Seconds (1–30) ", secondsInput), profileButton);
  const profileResult = h("div", { id: "profile-result" }, h("p", { class: "hint" }, "Samples the JavaScript of one worker thread (V8's profiler, 1 ms interval) while the job runs on."));
  panel.append(profileForm, profileResult);

  profileForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const thread = Number(threadInput.value);
    const seconds = Number(secondsInput.value);
    profileButton.disabled = true;
    profileResult.replaceChildren(h("p", {}, `Profiling worker thread ${thread} for ${seconds} s…`));
    post<ThreadProfile>("/v1/job/profile", { thread, seconds }).then(
      (profile) => {
        profileResult.replaceChildren(
          h("p", { id: "profile-summary" }, `Worker thread ${profile.thread} (tasks ${profile.tasks.join(", ")}): ${profile.samples.toLocaleString("en")} samples in ${formatDuration(profile.durationMs)} (one every ${profile.samplingIntervalUs / 1000} ms; idle time shows as "(idle)")`),
          h("div", { class: "flame-box" }, flameGraph(profile)),
        );
      },
      (e: unknown) => profileResult.replaceChildren(h("p", { class: "error" }, describe(e))),
    ).finally(() => {
      profileButton.disabled = false;
    });
  });
}
