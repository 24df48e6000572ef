//! The diesel schema, identical for both backends (times are Unix seconds).

diesel::table! {
    profiles (id) {
        id -> BigInt,
        name -> Text,
        sftp_enabled -> Bool,
        collaboration_enabled -> Bool,
        mail_enabled -> Bool,
    }
}

diesel::table! {
    roles (name) {
        name -> Text,
        admin_rank -> Integer,
        sftp_enabled -> Bool,
    }
}

diesel::table! {
    users (id) {
        id -> Text,
        email -> Text,
        name -> Text,
        password_hash -> Nullable<Text>,
        role -> Text,
        profile_id -> BigInt,
        active -> Bool,
        deleted -> Bool,
        internal -> Bool,
        force_password_change -> Bool,
        mobile_number -> Nullable<Text>,
        mobile_verified -> Bool,
        language_id -> Nullable<BigInt>,
        location_id -> Nullable<BigInt>,
        basedir_id -> Text,
        mydir_id -> Text,
        syncdir_id -> Text,
        version -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
        totp_secret -> Nullable<Text>,
        totp_enabled -> Bool,
        totp_last_step -> Nullable<BigInt>,
        user_name -> Nullable<Text>,
        user_name_folded -> Nullable<Text>,
        external_id -> Nullable<Text>,
        preferred_language -> Nullable<Text>,
        email_primary -> Nullable<Bool>,
        mobile_primary -> Nullable<Bool>,
        former_email -> Nullable<Text>,
    }
}

diesel::table! {
    system_settings (key) {
        key -> Text,
        value -> Text,
        updated_at -> BigInt,
    }
}

diesel::table! {
    clients (id) {
        id -> Text,
        secret_hash -> Text,
        name -> Text,
        description -> Text,
        redirect_uri -> Text,
        scope -> Text,
        flag -> Integer,
        flow -> Integer,
        kind -> Integer,
        access_token_lifetime -> Integer,
        refresh_token_lifetime -> Integer,
        signature_key -> Nullable<Text>,
        jwt_public_key -> Nullable<Text>,
        touch_id -> Bool,
        min_version -> Integer,
        ask_pin -> Integer,
        pin_timeout -> Integer,
        max_pin_attempts -> Integer,
        builtin -> Bool,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    devices (id) {
        id -> BigInt,
        client_id -> Text,
        user_id -> Text,
        install_tag_id -> Text,
        install_name -> Text,
        wipe_flag -> Integer,
        mobile_key_store -> Nullable<Text>,
        registration_token -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    locations (id) {
        id -> BigInt,
        name -> Text,
        dns -> Text,
        tenant_id -> BigInt,
        created_at -> BigInt,
    }
}

diesel::table! {
    events (seq) {
        seq -> BigInt,
        id -> Text,
        subject -> Text,
        actor_id -> Nullable<Text>,
        data -> Text,
        created_at -> BigInt,
        dispatched -> Bool,
        notified -> Bool,
    }
}

diesel::table! {
    authorization_codes (code_hash) {
        code_hash -> Text,
        client_id -> Text,
        user_id -> Text,
        redirect_uri -> Text,
        scope -> Text,
        code_challenge -> Nullable<Text>,
        family_id -> Text,
        expires_at -> BigInt,
        used_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    token_families (id) {
        id -> Text,
        user_id -> Text,
        client_id -> Text,
        device_id -> Nullable<BigInt>,
        revoked -> Bool,
        created_at -> BigInt,
        ends_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    access_tokens (token_hash) {
        token_hash -> Text,
        family_id -> Text,
        scope -> Text,
        expires_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    refresh_tokens (token_hash) {
        token_hash -> Text,
        family_id -> Text,
        scope -> Text,
        expires_at -> Nullable<BigInt>,
        used_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}

diesel::table! {
    used_assertions (client_id, jti) {
        client_id -> Text,
        jti -> Text,
        expires_at -> BigInt,
    }
}

diesel::table! {
    used_signature_codes (code_hash) {
        code_hash -> Text,
        expires_at -> BigInt,
    }
}

diesel::table! {
    authorize_requests (ticket_hash) {
        ticket_hash -> Text,
        client_id -> Text,
        user_id -> Text,
        redirect_uri -> Text,
        scope -> Text,
        state -> Nullable<Text>,
        code_challenge -> Nullable<Text>,
        mobile -> Bool,
        expires_at -> BigInt,
        kind -> Text,
    }
}

diesel::table! {
    scim_tokens (id) {
        id -> Text,
        name -> Text,
        token_hash -> Text,
        revoked -> Bool,
        created_at -> BigInt,
    }
}

diesel::joinable!(users -> profiles (profile_id));
diesel::joinable!(access_tokens -> token_families (family_id));
diesel::joinable!(refresh_tokens -> token_families (family_id));
diesel::joinable!(token_families -> users (user_id));
diesel::joinable!(token_families -> clients (client_id));
diesel::joinable!(devices -> users (user_id));

diesel::allow_tables_to_appear_in_same_query!(
    shared_mailboxes,
    shared_mailbox_members,
    password_resets,
    user_settings,
    contacts,
    contact_items,
    external_dls,
    blobs,
    objects,
    file_versions,
    object_members,
    uploads,
    comments,
    jobs,
    profiles,
    roles,
    users,
    system_settings,
    clients,
    devices,
    locations,
    events,
    authorization_codes,
    token_families,
    access_tokens,
    refresh_tokens,
    used_assertions,
    used_signature_codes,
    authorize_requests,
    scim_tokens,
    webhooks,
    webhook_deliveries,
    webhook_attempts,
    auth_failures,
    sms_messages,
    mail_outbox,
    web_sessions,
    remembered_devices,
);

diesel::table! {
    webhooks (id) {
        id -> Text,
        owner_id -> Text,
        url -> Text,
        token -> Nullable<Text>,
        secret -> Text,
        enabled -> Bool,
        subscriptions -> Text,
        status -> Text,
        description -> Text,
        version -> BigInt,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        webhook_id -> Text,
        event_id -> Text,
        subject -> Text,
        payload -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> BigInt,
        lease_until -> Nullable<BigInt>,
        last_status -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    webhook_attempts (id) {
        id -> BigInt,
        delivery_id -> Text,
        attempt -> Integer,
        status_code -> Nullable<Integer>,
        duration_ms -> BigInt,
        error -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));

diesel::table! {
    auth_failures (key) {
        key -> Text,
        failures -> Integer,
        window_start -> BigInt,
        locked_until -> Nullable<BigInt>,
    }
}

diesel::table! {
    sms_messages (id) {
        id -> Text,
        user_id -> Nullable<Text>,
        to_number -> Text,
        body -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    mail_outbox (id) {
        id -> Text,
        user_id -> Nullable<Text>,
        to_address -> Text,
        subject -> Text,
        body -> Text,
        created_at -> BigInt,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> BigInt,
        lease_node -> Nullable<Text>,
        lease_until -> Nullable<BigInt>,
        last_error -> Nullable<Text>,
        sent_at -> Nullable<BigInt>,
        message_id -> Nullable<Text>,
        email_id -> Nullable<Text>,
        expires_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    web_sessions (id_hash) {
        id_hash -> Text,
        user_id -> Text,
        csrf_hash -> Text,
        state -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::joinable!(web_sessions -> users (user_id));

diesel::table! {
    remembered_devices (token_hash) {
        token_hash -> Text,
        user_id -> Text,
        expires_at -> BigInt,
    }
}

diesel::table! {
    sms_two_factor (user_id) {
        user_id -> Text,
        enabled_at -> BigInt,
    }
}

diesel::table! {
    sms_codes (user_id) {
        user_id -> Text,
        purpose -> Text,
        to_number -> Text,
        code_salt -> Text,
        code_hash -> Nullable<Text>,
        attempts -> Integer,
        sent_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    blobs (id) {
        id -> Text,
        size -> BigInt,
        md5 -> Text,
        refs -> BigInt,
        created_at -> BigInt,
        unreferenced_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    objects (id) {
        id -> Text,
        kind -> Text,
        parent_id -> Nullable<Text>,
        owner_id -> Text,
        system -> Nullable<Text>,
        name -> Text,
        name_folded -> Text,
        description -> Text,
        created_at -> BigInt,
        modified_at -> BigInt,
        creator_id -> Text,
        modifier_id -> Text,
        expire_at -> Nullable<BigInt>,
        deleted_at -> Nullable<BigInt>,
        trashed_with -> Nullable<Text>,
        perm_deleted -> Bool,
        secure -> Bool,
        syncable -> Bool,
        file_lifetime -> BigInt,
        current_version_id -> Nullable<Text>,
        size -> BigInt,
        mime -> Nullable<Text>,
        client_created_at -> Nullable<BigInt>,
        client_modified_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    file_versions (id) {
        id -> Text,
        file_id -> Text,
        number -> BigInt,
        blob_id -> Text,
        name -> Text,
        size -> BigInt,
        mime -> Text,
        creator_id -> Text,
        created_at -> BigInt,
        client_created_at -> Nullable<BigInt>,
        client_modified_at -> Nullable<BigInt>,
        av_status -> Text,
        av_signature -> Nullable<Text>,
        preview_status -> Text,
        preview_blob_id -> Nullable<Text>,
        deleted -> Bool,
    }
}

diesel::table! {
    object_members (object_id, user_id) {
        object_id -> Text,
        user_id -> Text,
        role_id -> BigInt,
        shared_by -> Text,
        notify_file_added -> Bool,
        created_at -> BigInt,
    }
}

diesel::table! {
    uploads (id) {
        id -> BigInt,
        user_id -> Text,
        folder_id -> Nullable<Text>,
        file_id -> Nullable<Text>,
        filename -> Text,
        staging -> Text,
        total_size -> Nullable<BigInt>,
        total_chunks -> Nullable<BigInt>,
        uploaded_chunks -> BigInt,
        uploaded_size -> BigInt,
        client_created_at -> Nullable<BigInt>,
        client_modified_at -> Nullable<BigInt>,
        disable_auto_version -> Bool,
        tracking_id -> Nullable<Text>,
        result_file_id -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
        expires_at -> BigInt,
        email_id -> Nullable<Text>,
    }
}

diesel::table! {
    comments (id) {
        id -> BigInt,
        object_id -> Text,
        parent_id -> Nullable<BigInt>,
        user_id -> Text,
        contents -> Text,
        created_at -> BigInt,
        modified_at -> BigInt,
        deleted -> Bool,
    }
}

diesel::table! {
    jobs (id) {
        id -> BigInt,
        kind -> Text,
        payload -> Text,
        state -> Text,
        attempts -> BigInt,
        max_attempts -> BigInt,
        run_at -> BigInt,
        lease_until -> Nullable<BigInt>,
        locked_by -> Nullable<Text>,
        last_error -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::joinable!(file_versions -> objects (file_id));
diesel::joinable!(object_members -> objects (object_id));
diesel::joinable!(comments -> objects (object_id));

diesel::table! {
    password_resets (token_hash) {
        token_hash -> Text,
        user_id -> Text,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    user_settings (user_id) {
        user_id -> Text,
        signature -> Text,
        mobile_key_store -> Text,
        updated_at -> BigInt,
    }
}

diesel::table! {
    contacts (id) {
        id -> BigInt,
        user_id -> Text,
        name -> Text,
        name_folded -> Text,
        created_at -> BigInt,
        modified_at -> BigInt,
        last_contact_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    contact_items (contact_id, position) {
        contact_id -> BigInt,
        user_id -> Text,
        position -> BigInt,
        email -> Text,
    }
}

diesel::table! {
    external_dls (email) {
        email -> Text,
        created_by -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::joinable!(contact_items -> contacts (contact_id));
diesel::joinable!(contact_items -> external_dls (email));

diesel::table! {
    emails (id) {
        id -> Text,
        sender_id -> Text,
        actor_id -> Text,
        status -> Text,
        kind -> Text,
        subject -> Text,
        body -> Text,
        acl -> Text,
        secure_body -> Bool,
        self_copy -> Bool,
        include_fingerprint -> Bool,
        expire_at -> Nullable<BigInt>,
        parent_email_id -> Nullable<Text>,
        web_form_id -> Nullable<Text>,
        web_form_fields -> Nullable<Text>,
        error -> Nullable<Text>,
        created_at -> BigInt,
        modified_at -> BigInt,
        sent_at -> Nullable<BigInt>,
        withdrawn_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    email_recipients (email_id, position) {
        email_id -> Text,
        position -> Integer,
        kind -> Integer,
        address -> Text,
        user_id -> Nullable<Text>,
        ref_hash -> Nullable<Text>,
    }
}

diesel::table! {
    email_attachments (id) {
        id -> Text,
        email_id -> Text,
        position -> Integer,
        file_id -> Text,
        version_id -> Text,
        blob_id -> Text,
        name -> Text,
        size -> BigInt,
        mime -> Text,
        created_at -> BigInt,
        withdrawn -> Bool,
    }
}

diesel::table! {
    mailbox_entries (user_id, email_id, role) {
        user_id -> Text,
        email_id -> Text,
        role -> Text,
        bucket -> Text,
        is_read -> Bool,
        trashed_at -> Nullable<BigInt>,
        created_at -> BigInt,
        modified_at -> BigInt,
    }
}

diesel::table! {
    shared_mailboxes (user_id) {
        user_id -> Text,
        created_at -> BigInt,
        modified_at -> BigInt,
    }
}

diesel::table! {
    mail_access_codes (email_id, position) {
        email_id -> Text,
        position -> Integer,
        code_salt -> Text,
        code_hash -> Text,
        attempts -> Integer,
        created_at -> BigInt,
        expire_at -> BigInt,
    }
}

diesel::table! {
    mail_access_sessions (token_hash) {
        token_hash -> Text,
        email_id -> Text,
        position -> Integer,
        created_at -> BigInt,
        expire_at -> BigInt,
    }
}

diesel::joinable!(mailbox_entries -> emails (email_id));
diesel::joinable!(email_recipients -> emails (email_id));
diesel::joinable!(email_attachments -> emails (email_id));
diesel::allow_tables_to_appear_in_same_query!(
    emails,
    mailbox_entries,
    email_recipients,
    email_attachments,
    users
);
diesel::table! {
    shared_mailbox_members (mailbox_id, member_id) {
        mailbox_id -> Text,
        member_id -> Text,
        active -> Bool,
        modified_at -> BigInt,
    }
}

diesel::joinable!(shared_mailboxes -> users (user_id));
diesel::joinable!(shared_mailbox_members -> shared_mailboxes (mailbox_id));

diesel::table! {
    web_forms (id) {
        id -> Text,
        name -> Text,
        name_folded -> Text,
        description -> Text,
        owner_id -> Text,
        active -> Bool,
        auth_required -> Bool,
        embedded -> Bool,
        standalone -> Bool,
        fields -> Text,
        profiles -> Text,
        created_at -> BigInt,
        modified_at -> BigInt,
    }
}

diesel::joinable!(web_forms -> users (owner_id));
diesel::allow_tables_to_appear_in_same_query!(web_forms, users);

diesel::table! {
    web_form_drafts (email_id) {
        email_id -> Text,
        form_id -> Text,
        ref_hash -> Text,
        submitter_id -> Nullable<Text>,
        created_at -> BigInt,
        expires_at -> BigInt,
    }
}

diesel::table! {
    favorites (id) {
        id -> BigInt,
        user_id -> Text,
        object_id -> Text,
        created_at -> BigInt,
    }
}

diesel::joinable!(favorites -> objects (object_id));
diesel::allow_tables_to_appear_in_same_query!(favorites, objects);

diesel::table! {
    folder_notifications (user_id, object_id) {
        user_id -> Text,
        object_id -> Text,
        file_added -> BigInt,
        comment_added -> BigInt,
        created_at -> BigInt,
        modified_at -> BigInt,
    }
}

diesel::table! {
    notification_items (id) {
        id -> BigInt,
        user_id -> Text,
        folder_id -> Text,
        kind -> Text,
        object_id -> Text,
        actor_id -> Nullable<Text>,
        detail -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    request_files (id) {
        id -> BigInt,
        ref_hash -> Text,
        email_id -> Text,
        position -> Integer,
        kind -> Text,
        requestor_id -> Text,
        actor_id -> Text,
        folder_id -> Nullable<Text>,
        shared_mailbox_id -> Nullable<Text>,
        recipient -> Text,
        recipient_user_id -> Nullable<Text>,
        file_limit -> BigInt,
        require_auth -> Bool,
        action_id -> BigInt,
        expire_at -> BigInt,
        withdrawn_at -> Nullable<BigInt>,
        reply_email_id -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    request_file_sources (request_file_id, file_id) {
        request_file_id -> BigInt,
        file_id -> Text,
    }
}

diesel::table! {
    request_file_uploads (id) {
        id -> BigInt,
        request_file_id -> BigInt,
        file_id -> Text,
        version_id -> Text,
        name -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    activities (seq) {
        seq -> BigInt,
        created_at -> BigInt,
        event -> Text,
        kind -> Text,
        actor_id -> Nullable<Text>,
        object_id -> Nullable<Text>,
        object_kind -> Nullable<Text>,
        object_name -> Nullable<Text>,
        parent_id -> Nullable<Text>,
        message -> Text,
        successful -> Bool,
        transaction_id -> Nullable<Text>,
        users -> Text,
        data -> Text,
        prev_hash -> Text,
        hash -> Text,
    }
}

diesel::table! {
    activity_users (user_id, seq) {
        user_id -> Text,
        seq -> BigInt,
        direct -> Bool,
        created_at -> BigInt,
    }
}

diesel::table! {
    audit_chain (id) {
        id -> Integer,
        first_seq -> BigInt,
        first_prev -> Text,
    }
}

diesel::table! {
    audit_checkpoints (seq) {
        seq -> BigInt,
        hash -> Text,
        created_at -> BigInt,
        public_key -> Text,
        signature -> Text,
    }
}

diesel::allow_tables_to_appear_in_same_query!(activities, activity_users, audit_checkpoints);

diesel::table! {
    ssh_keys (id) {
        id -> BigInt,
        user_id -> Text,
        name -> Text,
        public_key -> Text,
        fingerprint -> Text,
        active -> Bool,
        admin_active -> Bool,
        deleted -> Bool,
        created_at -> BigInt,
        deleted_at -> Nullable<BigInt>,
    }
}

diesel::joinable!(ssh_keys -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(ssh_keys, users);

diesel::table! {
    sftp_host_keys (algorithm) {
        algorithm -> Text,
        private_key -> Text,
        created_at -> BigInt,
    }
}

diesel::table! {
    sources (id) {
        id -> Text,
        owner_id -> Text,
        name -> Text,
        name_folded -> Text,
        description -> Text,
        url -> Text,
        type_id -> BigInt,
        credentials -> Nullable<Binary>,
        needs_auth -> Bool,
        created_at -> BigInt,
    }
}

diesel::table! {
    source_pins (user_id, source_id) {
        user_id -> Text,
        source_id -> Text,
        pinned_at -> BigInt,
    }
}

diesel::table! {
    source_locks (id) {
        id -> BigInt,
        source_id -> Text,
        path -> Text,
        user_id -> Text,
        remote_token -> Nullable<Text>,
        created_at -> BigInt,
    }
}

diesel::table! {
    source_transfers (id) {
        id -> Text,
        user_id -> Text,
        source_id -> Text,
        path -> Text,
        direction -> Text,
        state -> BigInt,
        err_code -> Nullable<BigInt>,
        object_id -> Nullable<Text>,
        folder_id -> Nullable<Text>,
        created_at -> BigInt,
        updated_at -> BigInt,
    }
}

diesel::table! {
    dli_exports (id) {
        id -> BigInt,
        user_id -> Text,
        requested_by -> Text,
        kind -> Text,
        start_day -> Text,
        end_day -> Text,
        status -> Text,
        attempts -> BigInt,
        file_name -> Nullable<Text>,
        blob_id -> Nullable<Text>,
        size -> Nullable<BigInt>,
        generated_at -> Nullable<BigInt>,
        created_at -> BigInt,
    }
}
