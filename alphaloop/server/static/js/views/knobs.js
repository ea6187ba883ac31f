// #/knobs: the Gymnasium env and the 16 knobs a proposer may change, with their bounds.
import { api } from "../api.js";
import { el, section, table } from "../dom.js";
import { knob } from "../format.js";

export async function render(root) {
  const env = await api("/api/env");
  const o = env.observation_space, a = env.action_space;
  root.append(section("The Gymnasium env", el("p", { id: "env-summary" },
    `${env.env_id}: observation ${o.kind}${JSON.stringify(o.shape)} (${o.layout}); action ${a.kind}${JSON.stringify(a.shape)} in [${a.low}, ${a.high}] (${a.layout}); reward: ${env.reward}.`),
    el("p", { class: "muted" }, `Config at the defaults (for ${env.n_assets} assets): ` + Object.entries(env.config).map(([k, v]) => `${k} ${knob(v)}`).join(", "))),
  section("The 16 knobs", el("p", { class: "muted" }, "The only things a proposer may change. A value out of bounds is clipped (and journaled as a clip); knobs of a group the mode does not use are recorded and ignored."),
    table([{ label: "knob", value: (k) => k.name, cls: () => "mono" }, { label: "group", value: (k) => k.group }, { label: "low", num: true, value: (k) => knob(k.low) },
      { label: "high", num: true, value: (k) => knob(k.high) }, { label: "scale", value: (k) => k.scale }, { label: "default", num: true, value: (k) => knob(k.default) }],
    env.knobs, { id: "knobs-table" })));
}
