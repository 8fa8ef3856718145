//! The control plane's one error shape, `{"error": {"type", "message", "details"?,
//! "request_id"}}`, and the one place error types map to HTTP statuses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The kind of an error (`error.type`); described in `/v1/openapi.json` from this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum ErrorType {
    InvalidAuth,
    Forbidden,
    QuotaExceeded,
    ValidationFailed,
    NotFound,
    SessionExpired,
    Conflict,
    RateLimited,
    /// The server is at its memory budget; try again after `Retry-After`.
    ServerBusy,
    InternalError,
}

impl ErrorType {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::InvalidAuth => "invalid_auth",
            ErrorType::Forbidden => "forbidden",
            ErrorType::QuotaExceeded => "quota_exceeded",
            ErrorType::ValidationFailed => "validation_failed",
            ErrorType::NotFound => "not_found",
            ErrorType::SessionExpired => "session_expired",
            ErrorType::Conflict => "conflict",
            ErrorType::RateLimited => "rate_limited",
            ErrorType::ServerBusy => "server_busy",
            ErrorType::InternalError => "internal_error",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            ErrorType::InvalidAuth => StatusCode::UNAUTHORIZED,
            ErrorType::Forbidden => StatusCode::FORBIDDEN,
            ErrorType::QuotaExceeded => StatusCode::PAYMENT_REQUIRED,
            ErrorType::ValidationFailed => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorType::NotFound => StatusCode::NOT_FOUND,
            ErrorType::SessionExpired => StatusCode::GONE,
            ErrorType::Conflict => StatusCode::CONFLICT,
            ErrorType::RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ErrorType::ServerBusy => StatusCode::SERVICE_UNAVAILABLE,
            ErrorType::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub kind: ErrorType,
    pub message: String,
    pub details: Option<Value>,
    /// Overrides the type's usual status (400 for a body that is not JSON, 413 for one too big).
    pub status: Option<StatusCode>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(kind: ErrorType, message: impl Into<String>) -> ApiError {
        ApiError { kind, message: message.into(), details: None, status: None, retry_after: None }
    }
    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }
    pub fn with_status(mut self, status: StatusCode) -> ApiError {
        self.status = Some(status);
        self
    }
    pub fn with_retry_after(mut self, seconds: u64) -> ApiError {
        self.retry_after = Some(seconds);
        self
    }
    pub fn validation(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorType::ValidationFailed, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorType::NotFound, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorType::InternalError, message)
    }
    pub fn expired(id: &str, reason: &str) -> ApiError {
        ApiError::new(
            ErrorType::SessionExpired,
            format!("sandbox {id} is closed ({reason}); nothing about it is recoverable: start a new one"),
        )
        .with_details(json!({"session_id": id, "reason": reason}))
    }
}

tokio::task_local! {
    /// The id of the request being served, for error bodies and logs.
    pub static REQUEST_ID: String;
}

pub fn current_request_id() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"type": self.kind.as_str(), "message": self.message, "request_id": current_request_id()});
        if let Some(d) = self.details {
            error["details"] = d;
        }
        let mut resp = (self.status.unwrap_or(self.kind.status()), axum::Json(json!({ "error": error }))).into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut().insert("retry-after", s.into());
        }
        resp
    }
}

impl From<crate::storage::StorageError> for ApiError {
    fn from(e: crate::storage::StorageError) -> ApiError {
        if let crate::storage::StorageError::KeyTaken = e {
            return ApiError::new(ErrorType::Conflict, e.to_string());
        }
        if let crate::storage::StorageError::TooManyKeys(max) = e {
            return ApiError::validation(e.to_string()).with_details(json!({"error": "too_many_keys", "max_live_keys": max}));
        }
        if let crate::storage::StorageError::Unstorable(_) = e {
            return ApiError::validation(e.to_string());
        }
        if let crate::storage::StorageError::Unavailable(_) = e {
            // The shared database is down or restarting: nothing was written, and the same
            // request succeeds once it is back.
            tracing::warn!(error = %e, "the database cannot be reached");
            return ApiError::new(ErrorType::ServerBusy, "the database is unavailable right now; nothing was changed, try again shortly").with_retry_after(1);
        }
        tracing::error!(error = %e, "storage failed");
        ApiError::internal(format!("storage failed: {e}"))
    }
}
