//! The operator's views and actions on accounts and clients beside their creation:
//! `cofferd user list|delete|reset-password` and `cofferd client list|delete`. Each runs the
//! service's use case for the operator (the same as the REST call, events included) and prints
//! JSON on stdout.

use crate::api;
use crate::config::ServerFlags;
use anyhow::Result;
use clap::Subcommand;
use coffer_service::identity::{admin_users, clients, password_reset, users};
use coffer_service::Ctx;
use serde_json::json;

#[derive(Subcommand)]
pub enum UserManage {
    /// List the accounts that are not deleted; prints a JSON array.
    List,
    /// Delete an account as `DELETE /rest/admin/users/{id}` does: it can no longer sign in and
    /// its tokens and sessions end at once; prints `{id, email, deleted}`.
    Delete {
        /// The account's id or email address.
        user: String,
        /// Ask the account's devices to wipe themselves.
        #[arg(long)]
        remote_wipe: bool,
        /// Keep the account's data for this account (id), instead of deleting what it did not share.
        #[arg(long, value_name = "USER_ID")]
        retain_to: Option<String>,
    },
    /// Make a password-reset link for an account and print it once, as `{id, email, link,
    /// expiresAt}` (nothing is mailed or logged; hand the link over yourself). It works once,
    /// for --password-reset-seconds, and replaces the account's earlier links.
    ResetPassword {
        /// The account's id or email address.
        user: String,
        /// The public base URL the link starts with [default: http://127.0.0.1:8080]
        #[arg(long, env = "COFFER_BASE_URL")]
        base_url: Option<String>,
    },
}

impl UserManage {
    /// The server settings these commands take as their own options.
    pub fn server_options(&self) -> ServerFlags {
        match self {
            UserManage::ResetPassword { base_url, .. } => ServerFlags {
                base_url: base_url.clone(),
                ..ServerFlags::default()
            },
            _ => ServerFlags::default(),
        }
    }
}

#[derive(Subcommand)]
pub enum ClientManage {
    /// List the registered clients (never their secrets); prints a JSON array.
    List,
    /// Delete a client with every token and device registration it holds; prints `{id, deleted}`.
    Delete {
        /// The client's id.
        id: String,
    },
}

pub fn user(ctx: &Ctx, command: UserManage) -> Result<()> {
    let out = match command {
        UserManage::List => {
            serde_json::to_value(admin_users::list_for_operator(ctx).map_err(api)?)?
        }
        UserManage::Delete {
            user,
            remote_wipe,
            retain_to,
        } => {
            let target = users::by_id_or_email(ctx, &user).map_err(api)?;
            let retain = retain_to.is_some();
            let opts = users::DeleteOptions::check(
                None,
                Some(retain),
                users::DeleteOptions {
                    remote_wipe,
                    retain_to_user: retain_to,
                    ..Default::default()
                },
            )
            .map_err(|e| api(e.into()))?;
            users::delete_by_operator(ctx, std::slice::from_ref(&target.id), &opts).map_err(api)?;
            json!({"id": target.id, "email": target.email, "deleted": true})
        }
        UserManage::ResetPassword { user, .. } => {
            let target = users::by_id_or_email(ctx, &user).map_err(api)?;
            let (link, expires_at) = password_reset::operator_link(ctx, &target.id).map_err(api)?;
            json!({"id": target.id, "email": target.email, "link": link, "expiresAt": expires_at})
        }
    };
    println!("{out}");
    Ok(())
}

pub fn client(ctx: &Ctx, command: ClientManage) -> Result<()> {
    let out = match command {
        ClientManage::List => serde_json::to_value(clients::list_for_operator(ctx).map_err(api)?)?,
        ClientManage::Delete { id } => {
            clients::delete_by_operator(ctx, &id).map_err(api)?;
            json!({"id": id, "deleted": true})
        }
    };
    println!("{out}");
    Ok(())
}
