//! crew-model's integration tests — the providers, against a loopback server and scripted scenarios
//! — as one test binary, a module per area.

mod model_anthropic;
mod model_local;
mod model_openai;
mod model_scripted;
mod model_spec;
