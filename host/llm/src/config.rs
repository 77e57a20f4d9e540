//! Which provider, model, endpoint and key a call uses, from the command line, the environment
//! and `settings.json` (in that order of precedence).

use crate::LlmError;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions, and every server that speaks it.
    OpenAi,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "Anthropic",
            Provider::OpenAi => "OpenAI-compatible API",
        })
    }
}

impl Provider {
    /// `claude-*` models are Anthropic's; every other name goes to an OpenAI-compatible server.
    pub fn for_model(model: &str) -> Provider {
        if model.starts_with("claude-") {
            Provider::Anthropic
        } else {
            Provider::OpenAi
        }
    }

    fn parse(name: &str) -> Result<Provider, LlmError> {
        match name.to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Provider::Anthropic),
            "openai" | "openai-compatible" => Ok(Provider::OpenAi),
            _ => Err(LlmError::UnknownProvider(name.to_string())),
        }
    }

    fn key_variable(self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::OpenAi => "OPENAI_API_KEY",
        }
    }

    fn base_url_variable(self) -> &'static str {
        match self {
            Provider::Anthropic => "ANTHROPIC_BASE_URL",
            Provider::OpenAi => "OPENAI_BASE_URL",
        }
    }

    /// The official SDKs' defaults: Anthropic's base has no version, OpenAI's ends in `/v1`.
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::OpenAi => "https://api.openai.com/v1",
        }
    }
}

/// The variables that hold the host's LLM credentials. They are meant for the provider alone:
/// the commands and MCP servers that workflows start never see them.
pub const CREDENTIAL_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// `settings.json` `llm`: every field optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// The model when neither `--model` nor `PFLOW_MODEL` names one.
    pub model: Option<String>,
    /// `anthropic` or `openai`, when the model's name does not say (a local model served by
    /// something Anthropic-compatible, say).
    pub provider: Option<String>,
    /// Seconds one HTTP request may take (default 120).
    pub timeout_seconds: Option<f64>,
    /// Retries of a request the provider asked to retry (default 3).
    pub max_retries: Option<u32>,
    /// The provider's API key, when its variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) is not
    /// set. The variable wins.
    pub api_key: Option<String>,
}

/// Everything a [`crate::Client`] needs.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub provider: Provider,
    pub model: String,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub max_retries: u32,
    /// A `retry-after` longer than this fails at once rather than leaving the user waiting.
    pub max_retry_wait: Duration,
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_RETRIES: u32 = 3;
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

impl LlmConfig {
    /// The model from `model_flag`, then `PFLOW_MODEL`, then `settings.model`; the provider
    /// from `settings.provider`, else from the model's name; its key and base URL from the
    /// provider's usual variables. `env` reads a variable (`std::env::var` in the binary).
    pub fn resolve(
        model_flag: Option<&str>,
        settings: &LlmSettings,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LlmConfig, LlmError> {
        let present = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
        let model = present(model_flag.map(str::to_string))
            .or_else(|| present(env("PFLOW_MODEL")))
            .or_else(|| present(settings.model.clone()))
            .ok_or(LlmError::NoModel)?;
        let provider = match &settings.provider {
            Some(name) => Provider::parse(name)?,
            None => Provider::for_model(&model),
        };
        let custom_base = present(env(provider.base_url_variable()));
        let api_key =
            present(env(provider.key_variable())).or_else(|| present(settings.api_key.clone()));
        // A local OpenAI-compatible server (Ollama, llama.cpp, vLLM) usually wants no key;
        // OpenAI and Anthropic always do.
        let key_required = provider == Provider::Anthropic || custom_base.is_none();
        if api_key.is_none() && key_required {
            return Err(LlmError::MissingKey {
                provider,
                variable: provider.key_variable(),
            });
        }
        let base_url = custom_base
            .unwrap_or_else(|| provider.default_base_url().to_string())
            .trim_end_matches('/')
            .to_string();
        Ok(LlmConfig {
            provider,
            model: model.trim().to_string(),
            base_url,
            api_key,
            timeout: settings
                .timeout_seconds
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .unwrap_or(DEFAULT_TIMEOUT),
            max_retries: settings.max_retries.unwrap_or(DEFAULT_RETRIES),
            max_retry_wait: MAX_RETRY_WAIT,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(
        flag: Option<&str>,
        settings: LlmSettings,
        vars: &[(&str, &str)],
    ) -> Result<LlmConfig, LlmError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        LlmConfig::resolve(flag, &settings, |name| vars.get(name).cloned())
    }

    #[test]
    fn the_flag_wins_over_the_environment_and_the_settings() {
        let settings = LlmSettings {
            model: Some("gpt-4o".into()),
            ..Default::default()
        };
        let vars = [("PFLOW_MODEL", "gpt-4.1"), ("ANTHROPIC_API_KEY", "k")];
        let config = resolve(Some("claude-sonnet-4-5"), settings.clone(), &vars).unwrap();
        assert_eq!(config.model, "claude-sonnet-4-5");
        assert_eq!(config.provider, Provider::Anthropic);
        assert_eq!(config.base_url, "https://api.anthropic.com");
        let vars = [("PFLOW_MODEL", "gpt-4.1"), ("OPENAI_API_KEY", "k")];
        assert_eq!(
            resolve(None, settings.clone(), &vars).unwrap().model,
            "gpt-4.1"
        );
        let vars = [("OPENAI_API_KEY", "k")];
        let config = resolve(None, settings, &vars).unwrap();
        assert_eq!(
            (config.model.as_str(), config.provider),
            ("gpt-4o", Provider::OpenAi)
        );
    }

    #[test]
    fn the_settings_provider_overrides_the_model_name() {
        let settings = LlmSettings {
            provider: Some("anthropic".into()),
            ..Default::default()
        };
        let vars = [
            ("ANTHROPIC_API_KEY", "k"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ];
        let config = resolve(Some("local-model"), settings, &vars).unwrap();
        assert_eq!(config.provider, Provider::Anthropic);
        assert_eq!(config.base_url, "http://127.0.0.1:9");
    }

    #[test]
    fn missing_model_key_and_provider_are_named() {
        let error = resolve(None, LlmSettings::default(), &[]).unwrap_err();
        assert!(error.to_string().contains("--model"), "{error}");
        let error = resolve(Some("claude-x"), LlmSettings::default(), &[]).unwrap_err();
        assert!(error.to_string().contains("ANTHROPIC_API_KEY"), "{error}");
        let error = resolve(Some("gpt-4o"), LlmSettings::default(), &[]).unwrap_err();
        assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
        let settings = LlmSettings {
            provider: Some("bard".into()),
            ..Default::default()
        };
        let error = resolve(Some("x"), settings, &[]).unwrap_err();
        assert!(error.to_string().contains("'bard'"), "{error}");
    }

    #[test]
    fn every_key_variable_is_withheld_from_commands() {
        for provider in [Provider::Anthropic, Provider::OpenAi] {
            assert!(CREDENTIAL_VARIABLES.contains(&provider.key_variable()));
        }
    }

    #[test]
    fn the_settings_key_serves_when_the_variable_is_not_set() {
        let settings = LlmSettings {
            api_key: Some("from-settings".into()),
            ..Default::default()
        };
        let config = resolve(Some("claude-x"), settings.clone(), &[]).unwrap();
        assert_eq!(config.api_key.as_deref(), Some("from-settings"));
        let config = resolve(Some("claude-x"), settings, &[("ANTHROPIC_API_KEY", "env")]).unwrap();
        assert_eq!(config.api_key.as_deref(), Some("env"));
    }

    #[test]
    fn a_local_openai_compatible_server_needs_no_key() {
        let vars = [("OPENAI_BASE_URL", "http://localhost:11434/v1")];
        let config = resolve(Some("llama3.2"), LlmSettings::default(), &vars).unwrap();
        assert_eq!(config.api_key, None);
        assert_eq!(config.base_url, "http://localhost:11434/v1");
    }
}
