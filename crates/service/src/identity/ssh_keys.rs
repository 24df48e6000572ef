//! Users' SSH public keys (`/rest/userSshPublicKeys*`, `/rest/admin/users/{id}/userSshPublicKeys*`)
//! and the SFTP gate: whether SFTP is allowed for an account at all.
//!
//! A key is one OpenSSH public-key line of Ed25519, ECDSA (P-256, P-384, P-521) or RSA of at
//! least 2048 bits, read and fingerprinted (SHA-256) with the `ssh-key` crate. A key is live on
//! one account only, so that a key names one SFTP user; its name is unique among the user's
//! live keys. Deleting a key marks it deleted (the administrator's list still shows it); from
//! then on it signs in nowhere. Generating makes an Ed25519 pair whose private key (encrypted
//! with bcrypt-pbkdf and AES-256-CTR when a passphrase is given) is answered once and never
//! stored; it is rate-limited per account, since each one costs a key derivation.
//!
//! Every operation first passes the SFTP gate of the account whose keys it touches (the caller's
//! own, or the administrator's target): the system setting `sftpEnabled` and the account's role
//! (403 `ERR_SYSTEM_ROLE_SFTP_DISABLED`), then the account's profile (403
//! `ERR_PROFILE_SFTP_DISABLED`). The SFTP server asks the same gate at every sign-in.

use crate::platform::auth::{AccountAdmin, Caller};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::Role;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{SshKey, User};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::json;
use ssh_key::private::{Ed25519Keypair, KeypairData};
use ssh_key::public::KeyData;
use ssh_key::{Cipher, EcdsaCurve, HashAlg, Kdf, LineEnding, PrivateKey, PublicKey};
use utoipa::ToSchema;

/// The longest key name.
pub const MAX_NAME: usize = 50;
/// The shortest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: u32 = 2048;
/// Generated pairs per account within [`GENERATE_WINDOW`] seconds.
pub const GENERATE_MAX: i32 = 10;
pub const GENERATE_WINDOW: i64 = 3600;

/// A key (`UserSshPublicKey`; the administrator's list adds `deleted`, `UserSshPublicKey1`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SshKeyView {
    pub id: i64,
    pub user_id: String,
    pub name: String,
    /// The OpenSSH public-key line.
    pub public_key: String,
    /// `SHA256:` and the unpadded base64 of the key's SHA-256, as `ssh-keygen -l` shows it.
    pub fingerprint: String,
    pub active: bool,
    pub admin_active: bool,
    pub created: String,
    /// Only in the administrator's list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<bool>,
}

impl SshKeyView {
    fn of(k: &SshKey, with_deleted: bool) -> SshKeyView {
        SshKeyView {
            id: k.id,
            user_id: k.user_id.clone(),
            name: k.name.clone(),
            public_key: k.public_key.clone(),
            fingerprint: k.fingerprint.clone(),
            active: k.active,
            admin_active: k.admin_active,
            created: rfc3339(k.created_at),
            deleted: with_deleted.then_some(k.deleted),
        }
    }
}

/// A generated pair (`UserGeneratedSshPublicKeyKey`), answered once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedKey {
    /// The OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`), encrypted when a
    /// passphrase was given. Coffer keeps no copy.
    pub private_key: String,
    /// The OpenSSH public-key line, registered as a key of the account.
    pub public_key: String,
    /// The registered key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<SshKeyView>,
}

fn invalid(field: &str, why: &str) -> Error {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("Invalid parameter ({why})."))
        .into()
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// A key as stored: its OpenSSH line (type, base64 and the comment, if any) and its SHA-256
/// fingerprint. Refuses what is not one line of an accepted type (422 `ERR_INVALID_PARAMETER`).
pub fn parse_public_key(text: &str) -> Result<(String, String)> {
    let line = text.trim();
    if line.is_empty() || line.contains(['\n', '\r']) {
        return Err(invalid("publicKey", "one OpenSSH public-key line"));
    }
    let key = PublicKey::from_openssh(line)
        .map_err(|_| invalid("publicKey", "not an OpenSSH public key"))?;
    accepted(&key)?;
    let normalized = key
        .to_openssh()
        .map_err(|_| invalid("publicKey", "not an OpenSSH public key"))?;
    Ok((normalized, fingerprint(&key)))
}

/// The SHA-256 fingerprint of a key, as stored and shown.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// Whether the key's type and size are ones Coffer takes.
fn accepted(key: &PublicKey) -> Result<()> {
    match key.key_data() {
        KeyData::Ed25519(_) => Ok(()),
        KeyData::Ecdsa(e) => match e.curve() {
            EcdsaCurve::NistP256 | EcdsaCurve::NistP384 | EcdsaCurve::NistP521 => Ok(()),
        },
        KeyData::Rsa(r) if r.key_size() >= MIN_RSA_BITS => Ok(()),
        KeyData::Rsa(_) => Err(invalid("publicKey", "an RSA key needs at least 2048 bits")),
        _ => Err(invalid(
            "publicKey",
            "the key type is not accepted: Ed25519, ECDSA P-256/P-384/P-521 or RSA",
        )),
    }
}

fn check_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "name").into());
    }
    if name.chars().count() > MAX_NAME {
        return Err(invalid("name", "at most 50 characters"));
    }
    Ok(name.to_string())
}

/// Whether SFTP is allowed for the account: the system setting and the role (403
/// `ERR_SYSTEM_ROLE_SFTP_DISABLED`), then the profile (403 `ERR_PROFILE_SFTP_DISABLED`).
pub fn sftp_gate(c: &mut DbConn, user: &User) -> Result<()> {
    let system = coffer_store::settings::get(c, "sftpEnabled")?.is_none_or(|v| v == "true");
    if !system || !coffer_store::users::role_sftp_enabled(c, &user.role)? {
        return Err(ApiError::new(ErrorCode::SystemRoleSftpDisabled).into());
    }
    let profile = coffer_store::users::profile(c, user.profile_id)?;
    if !profile.is_some_and(|p| p.sftp_enabled) {
        return Err(ApiError::new(ErrorCode::ProfileSftpDisabled).into());
    }
    Ok(())
}

/// The account an administrator acts on: it exists (404), is not deleted (403
/// `ERR_ENTITY_DELETED`), and a helpdesk administrator acts on plain users only (403
/// `ERR_ADMIN_ROLE_RANK_RESTRICTED`).
fn target(c: &mut DbConn, admin: &AccountAdmin, user_id: &str) -> Result<User> {
    let u = coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
    if u.deleted {
        return Err(ApiError::new(ErrorCode::EntityDeleted).into());
    }
    if !admin.may_manage(u.role.parse::<Role>().unwrap_or(Role::User)) {
        return Err(ApiError::new(ErrorCode::AdminRoleRankRestricted)
            .with_message(
                "The administrator role rank does not allow this operation (a helpdesk administrator manages plain users' keys only).",
            )
            .into());
    }
    Ok(u)
}

fn insert(
    c: &mut DbConn,
    user: &User,
    actor: &str,
    name: &str,
    public_key: &str,
    fingerprint: &str,
    generated: bool,
) -> Result<SshKey> {
    if coffer_store::ssh_keys::live_named(c, &user.id, name)?.is_some() {
        return Err(ApiError::field(ErrorCode::SshPublicKeyExists, "name").into());
    }
    if coffer_store::ssh_keys::live_by_fingerprint(c, fingerprint)?.is_some() {
        return Err(invalid(
            "publicKey",
            "the key is registered already; a key signs in one account only",
        ));
    }
    let new = coffer_store::ssh_keys::NewKey {
        user_id: &user.id,
        name,
        public_key,
        fingerprint,
    };
    // The unique indexes decide a race that passed the reads above.
    let k = coffer_store::ssh_keys::insert(c, &new, now())?
        .ok_or_else(|| ApiError::field(ErrorCode::SshPublicKeyExists, "name"))?;
    events::record(
        c,
        "ssh.key.create",
        Some(actor),
        json!({"id": k.id, "userId": k.user_id, "name": k.name, "fingerprint": k.fingerprint, "generated": generated}),
    )?;
    Ok(k)
}

fn create_for(
    ctx: &Ctx,
    actor: &str,
    user_id: &str,
    admin: Option<&AccountAdmin>,
    name: &str,
    public_key: &str,
) -> Result<SshKeyView> {
    let name = check_name(name)?;
    let (line, fp) = parse_public_key(public_key)?;
    ctx.write(|c| {
        let user = match admin {
            Some(a) => target(c, a, user_id)?,
            None => coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?,
        };
        sftp_gate(c, &user)?;
        let k = insert(c, &user, actor, &name, &line, &fp, false)?;
        Ok(SshKeyView::of(&k, false))
    })
}

/// `POST /rest/userSshPublicKeys/create`: registers a key of the caller's.
pub fn create(ctx: &Ctx, caller: &Caller, name: &str, public_key: &str) -> Result<SshKeyView> {
    create_for(
        ctx,
        caller.user_id(),
        caller.user_id(),
        None,
        name,
        public_key,
    )
}

/// `POST /rest/admin/users/{id}/userSshPublicKeys/create`: registers a key of the account's.
pub fn admin_create(
    ctx: &Ctx,
    admin: &AccountAdmin,
    user_id: &str,
    name: &str,
    public_key: &str,
) -> Result<SshKeyView> {
    create_for(ctx, admin.user_id(), user_id, Some(admin), name, public_key)
}

/// A new Ed25519 pair: the private key in OpenSSH form (encrypted with `passphrase`, when one
/// is given) and the public-key line. The randomness comes from the operating system.
pub(crate) fn new_pair(comment: &str, passphrase: Option<&str>) -> Result<(String, String)> {
    use rand::RngCore;
    let mut rng = rand::rngs::OsRng;
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let pair = Ed25519Keypair::from_seed(&seed);
    seed.fill(0);
    let mut key = PrivateKey::new(KeypairData::from(pair), comment).map_err(Error::internal)?;
    key.set_comment(comment);
    let public = key.public_key().to_openssh().map_err(Error::internal)?;
    let key = match passphrase {
        Some(p) => {
            let mut salt = vec![0u8; 16];
            rng.fill_bytes(&mut salt);
            let kdf = Kdf::Bcrypt { salt, rounds: 16 };
            key.encrypt_with(Cipher::Aes256Ctr, kdf, rng.next_u32(), p)
                .map_err(Error::internal)?
        }
        None => key,
    };
    let private = key.to_openssh(LineEnding::LF).map_err(Error::internal)?;
    Ok((private.to_string(), public))
}

fn generate_for(
    ctx: &Ctx,
    actor: &str,
    user_id: &str,
    admin: Option<&AccountAdmin>,
    name: &str,
    passphrase: Option<&str>,
) -> Result<GeneratedKey> {
    let name = check_name(name)?;
    // The gate and the name are checked before the work of making a pair, and again when the
    // key is stored.
    ctx.with_conn(|c| {
        let user = match admin {
            Some(a) => target(c, a, user_id)?,
            None => coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?,
        };
        sftp_gate(c, &user)?;
        if coffer_store::ssh_keys::live_named(c, &user.id, &name)?.is_some() {
            return Err(ApiError::field(ErrorCode::SshPublicKeyExists, "name").into());
        }
        Ok(())
    })?;
    let passphrase = passphrase.filter(|p| !p.is_empty());
    let (private_key, public_line) = new_pair(&name, passphrase)?;
    let (line, fp) = parse_public_key(&public_line)?;
    let k = ctx.write(|c| {
        let t = now();
        let key = format!("ssh-key-generate:{actor}");
        if let Some(start) =
            coffer_store::throttle::spend(c, &key, GENERATE_MAX, GENERATE_WINDOW, t)?
        {
            return Err(ApiError::new(ErrorCode::RequestRateLimited)
                .with_message(format!(
                    "Too many requests (at most {GENERATE_MAX} generated keys an hour)."
                ))
                .with_retry_after((start + GENERATE_WINDOW - t).max(1))
                .into());
        }
        let user = match admin {
            Some(a) => target(c, a, user_id)?,
            None => coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?,
        };
        sftp_gate(c, &user)?;
        insert(c, &user, actor, &name, &line, &fp, true)
    })?;
    Ok(GeneratedKey {
        private_key,
        public_key: line,
        key: Some(SshKeyView::of(&k, false)),
    })
}

/// `POST /rest/userSshPublicKeys/generate`.
pub fn generate(
    ctx: &Ctx,
    caller: &Caller,
    name: &str,
    passphrase: Option<&str>,
) -> Result<GeneratedKey> {
    generate_for(
        ctx,
        caller.user_id(),
        caller.user_id(),
        None,
        name,
        passphrase,
    )
}

/// `POST /rest/admin/users/{id}/userSshPublicKeys/generate`.
pub fn admin_generate(
    ctx: &Ctx,
    admin: &AccountAdmin,
    user_id: &str,
    name: &str,
    passphrase: Option<&str>,
) -> Result<GeneratedKey> {
    generate_for(ctx, admin.user_id(), user_id, Some(admin), name, passphrase)
}

/// `GET /rest/userSshPublicKeys`: the caller's live keys.
pub fn list(ctx: &Ctx, caller: &Caller, offset: i64, limit: i64) -> Result<Listed<SshKeyView>> {
    ctx.read(|c| {
        sftp_gate(c, &caller.user)?;
        let (items, total) =
            coffer_store::ssh_keys::of_user(c, caller.user_id(), false, offset, limit)?;
        Ok(Listed {
            items: items.iter().map(|k| SshKeyView::of(k, false)).collect(),
            total,
            offset,
            limit,
        })
    })
}

/// `GET /rest/admin/users/{id}/userSshPublicKeys`: every key of the account, deleted ones too.
pub fn admin_list(
    ctx: &Ctx,
    admin: &AccountAdmin,
    user_id: &str,
    offset: i64,
    limit: i64,
) -> Result<Listed<SshKeyView>> {
    ctx.read(|c| {
        let user = target(c, admin, user_id)?;
        sftp_gate(c, &user)?;
        let (items, total) = coffer_store::ssh_keys::of_user(c, &user.id, true, offset, limit)?;
        Ok(Listed {
            items: items.iter().map(|k| SshKeyView::of(k, true)).collect(),
            total,
            offset,
            limit,
        })
    })
}

/// `DELETE /rest/userSshPublicKeys/{id}`: the caller's own key; another's answers 403
/// `ERR_ACCESS_USER`, a deleted one 403 `ERR_ENTITY_DELETED`, an unknown one 404. The key signs
/// in nowhere from the commit on.
pub fn delete(ctx: &Ctx, caller: &Caller, id: i64) -> Result<()> {
    ctx.write(|c| {
        sftp_gate(c, &caller.user)?;
        let k = coffer_store::ssh_keys::by_id(c, id)?.ok_or_else(not_found)?;
        if k.user_id != caller.user_id() {
            return Err(ApiError::new(ErrorCode::AccessUser).into());
        }
        if k.deleted || !coffer_store::ssh_keys::delete(c, k.id, now())? {
            return Err(ApiError::new(ErrorCode::EntityDeleted).into());
        }
        events::record(
            c,
            "ssh.key.delete",
            Some(caller.user_id()),
            json!({"id": k.id, "userId": k.user_id, "name": k.name, "fingerprint": k.fingerprint}),
        )
    })
}

/// The account a key signs in, for the SFTP server: the live, active key with this fingerprint
/// on the account with this email, the account active and not deleted, and SFTP allowed for
/// it. Read afresh at every sign-in, so a deleted key or account, or a closed gate, is refused
/// at once.
pub fn sign_in(ctx: &Ctx, email: &str, fingerprint: &str) -> Result<Option<User>> {
    ctx.read(|c| {
        let email = email.trim().to_ascii_lowercase();
        let Some((_, user)) = coffer_store::ssh_keys::sign_in(c, &email, fingerprint)? else {
            return Ok(None);
        };
        if !user.active || user.deleted {
            return Ok(None);
        }
        match sftp_gate(c, &user) {
            Ok(()) => Ok(Some(user)),
            Err(Error::Api(_)) => Ok(None),
            Err(e) => Err(e),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAID7/VgbmiPfqN06TnCoE7Uycybq+93GKoZLN5gpxM7Gv laptop";

    #[test]
    fn a_key_is_read_and_fingerprinted() {
        let (line, fp) = parse_public_key(&format!("  {ED}\n")).unwrap();
        assert_eq!(line, ED);
        assert!(fp.starts_with("SHA256:"), "{fp}");
    }

    #[test]
    fn what_is_not_one_key_line_is_refused() {
        for bad in [
            "",
            "ssh-ed25519",
            "ssh-ed25519 AAAA",
            &format!("{ED}\n{ED}"),
        ] {
            assert!(parse_public_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_generated_pair_reads_back_and_is_encrypted_with_a_passphrase() {
        let (private, public) = new_pair("k", Some("secret")).unwrap();
        let k = PrivateKey::from_openssh(&private).unwrap();
        assert!(k.is_encrypted());
        let k = k.decrypt("secret").unwrap();
        assert_eq!(k.public_key().to_openssh().unwrap(), public);
        let (private, _) = new_pair("k", None).unwrap();
        assert!(!PrivateKey::from_openssh(&private).unwrap().is_encrypted());
    }
}
