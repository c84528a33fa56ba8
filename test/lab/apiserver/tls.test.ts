// The lab API server's self-signed certificate: every one made is one OpenSSL accepts (its serial number is a
// minimal DER integer), names 127.0.0.1 and localhost, and matches its key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext as tlsContext } from 'node:tls';
import { selfSignedCertificate } from '../../../packages/lab/src/apiserver/tls.js';

test('500 certificates in a row are all accepted, with 127.0.0.1 and localhost and their own key', () => {
  for (let i = 0; i < 500; i++) {
    const c = selfSignedCertificate();
    const x = new X509Certificate(c.certPem);
    assert.match(x.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.match(x.subjectAltName ?? '', /DNS:localhost/);
    assert.ok(x.checkPrivateKey(createPrivateKey(c.keyPem)));
    assert.doesNotMatch(x.serialNumber, /^00/, 'no padding byte in the serial');
    tlsContext({ cert: c.certPem, key: c.keyPem });
  }
});
