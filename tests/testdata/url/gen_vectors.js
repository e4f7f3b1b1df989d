// Generates whatwg_vectors.json: tricky absolute URLs with what Node's WHATWG
// `URL` (ada) makes of them — href, protocol, hostname and port, or failure.
//
//   node tests/testdata/url/gen_vectors.js > tests/testdata/url/whatwg_vectors.json
//
// Deterministic: the inputs are listed below, so the output only changes when
// this script (or the Node version) does. The C++ test reads the file; it never
// runs node. Keep both files; the header records which Node and ada made it.
'use strict';

const inputs = [];
const add = (...xs) => { for (const x of xs) inputs.push(x); };
const hosts = (...hs) => { for (const h of hs) inputs.push(`https://${h}/`); };

// --- Schemes, slashes and pre-processing --------------------------------------
add('https://example.com/', 'HTTPS://EXAMPLE.COM/', 'HtTpS://Example.Com/', 'https:example.com',
    'https:/example.com/', 'https:////example.com/', 'https:\\\\example.com\\', 'https:\\/example.com/',
    'https:/\\example.com/', 'https:\\example.com', 'https:///example.com', 'https://example.com',
    'http://example.com/', 'http://example.com:80/', 'http://example.com:443/', 'ws://example.com/',
    'wss://example.com:443/chat', 'ws://example.com:80', 'ftp://example.com:21/pub', 'ftp://user@example.com/',
    ' https://example.com/ ', '\u0000https://example.com/\u001f', '\t\nhttps://example.com/\r\n',
    'ht\ttps://example.com/', 'https:\n//example.com/', 'https://exa\tmple.com/', 'https://example.com:4\n43/',
    'https://example.com/pa\tth', '\u0001https://example.com/', 'https://example.com/\u0000',
    'https://example.com/ ', 'https://example.com/\u00a0', '\u00a0https://example.com/',
    '', ' ', 'https:', 'https:/', 'https://', 'https:///', 'https:////', 'https://:443/', 'https://#frag',
    'https://?q', 'https://@/', 'https://user@/', 'https://:@/', 'example.com', '//example.com/',
    '/path', 'https//example.com', '1https://example.com/', 'ht tp://example.com/', 'h%74tps://example.com/',
    'https+unix://%2Fvar%2Frun%2Fdocker.sock/info', 'gopher://127.0.0.1:6379/_INFO',
    'data:text/plain;base64,SGVsbG8=', 'javascript:alert(1)', 'blob:https://example.com/x',
    'jar:https://example.com/x.jar!/', 'mailto:a@example.com', 'HTTPS+UNIX://x/', 'a:', 'x-y.z+1:foo',
    'https-x://example.com/', 'https:\u0000//example.com/');

// --- Userinfo and the authority delimiters ---------------------------------------
add('https://user:pass@example.com/', 'https://user@example.com/', 'https://user:@example.com/',
    'https://:pass@example.com/', 'https://@example.com/', 'https://:@example.com/',
    'https://a@b@example.com/', 'https://a:b:c@example.com/', 'https://a:b@c:d@example.com/',
    'https://example.com@@127.0.0.1/', 'https://@@example.com/', 'https://' + '@'.repeat(40) + 'example.com/',
    'https://allowed.example@127.0.0.1/', 'https://allowed.example\\@127.0.0.1/',
    'https://allowed.example#@127.0.0.1/', 'https://allowed.example?@127.0.0.1/',
    'https://allowed.example/@127.0.0.1/', 'https://127.0.0.1\\@allowed.example/',
    'https://127.0.0.1#@allowed.example/', 'https://127.1.1.1:80@127.2.2.2:80/',
    'https://127.1.1.1:80#@127.2.2.2:80/', 'https://example.com%2F@127.0.0.1/',
    'https://127.0.0.1%2F@example.com/', 'https://us er:pa ss@example.com/', 'https://u"<>`{}|^@example.com/',
    'https://u;=[]\\@example.com/', 'https://u;=[]@example.com/', 'https://%41%zz@example.com/',
    'https://üser:päss@example.com/', 'https://u%40@example.com/', 'https://u\t@example.com/',
    'https://u$&+,!*\'()~_-.@example.com/', 'https://u/@example.com/', 'https://u:p/@example.com/',
    'https://user:pass@/', 'https://user:pass@:443/', 'https://ghp_token123@api.github.com/user');

// --- Hosts: case, percent-encoding, forbidden code points ------------------------
hosts('EXAMPLE.COM', 'ex%61mple.com', 'EX%41MPLE.com', '%65%78%61%6d%70%6c%65.com', 'loc%61lhost',
      'localhost%2e', 'localhost.', 'localhost..', '.localhost', 'foo.localhost', 'localhost.example.com',
      '%31%32%37%2e%30%2e%30%2e%31', '127%2e0%2e0%2e1', '127.0.0.1%00.example.com', '127.0.0.1%09',
      '%5b::1%5d', 'exa%mple.com', 'exa%2mple.com', 'exa%zzmple.com', 'exa%25mple.com', 'a%20b.com',
      'a%00b', 'a%7fb', 'a%C3%BCb.com', 'a%FFb.com', 'a%C3b.com', '%EF%BB%BFexample.com', '%E2%80%8Bexample.com',
      'ex%C2%ADample.com', '%ef%bc%a5xample.com', 'xn--mnchen-3ya.de', 'a..b', '..', '.', 'a.b.', 'a b.com');
for (const ch of ['<', '>', '^', '|', '[', ']', '\u007f', '"', '`', '{', '}', '!', '$', '&', '\'', '(', ')', '*',
                  '+', ',', ';', '=', '_', '~', '-', '\u0001', '\u001f', '%', ' ']) {
  inputs.push(`https://exa${ch}mple.com/`);
}
hosts('exa%3Cmple.com', 'exa%5Emple.com', 'exa%7Cmple.com', 'exa%40mple.com', 'exa%3Ample.com', 'exa%2Fmple.com',
      'exa%23mple.com', 'exa%3Fmple.com', 'exa%5Cmple.com', 'exa%22mple.com', 'exa%60mple.com', 'exa%7Bmple.com');

// --- IPv4 in every form the host parser accepts (and some it refuses) ------------
hosts('127.0.0.1', '127.1', '127.0.1', '2130706433', '017700000001', '0x7f000001', '0X7F000001', '0x7f.1',
      '0x7f.0.0.1', '0x7F.0.0.1', '0x7f.0x0.0x0.0x1', '0177.0.0.1', '0177.00.01', '127.0.0.01', '127.000.000.001',
      '127.16777215', '127.65535.1', '127.0.0.1.', '127.0.0.1..', '.127.0.0.1', '127..0.1', '127.0.0.0x',
      '0x', '0X', '0x0', '0', '00', '0.0', '0x.0x', '0x.0x.0x.0x', '0xg', '0x.g', '1.0xg', '09', '08.1', '1.09',
      '09.1.1.1', '0127.0.0.1', '010.0.0.1', '012.0.0.1', '0x0a.0.0.1', '3232235777', '0xc0.0xa8.1.1',
      '2886729729', '1681915904', '0xa9fea9fe', '0251.0376.0251.0376', '0251.00376.000251.0000376',
      '0251.254.169.254', '169.16689662', '4294967295', '4294967296', '0xffffffff', '0x100000000',
      '0xFFFFFFFFF', '037777777777', '040000000000', '1.2.3.4.5', '1.2.3.4.5.', '256.0.0.1', '1.256.0.0',
      '1.2.256.0', '1.2.3.256', '1.2.65536', '1.2.65535', '1.16777216', '1.16777215', '425.510.425.510',
      '7147006462', '00000000000000000000000001', '0x00000000000000000000007f.1', '1.2.3.4e', '1.2.3.4x',
      'example.123', 'example.0x1', 'example.0x', 'example.09', 'foo.09.bar', 'foo.1.bar', '1.foo',
      '123abc', '0x7f.0.0.1.', 'example.com.123', '134744072', '1.1.1.1', '93.184.215.14',
      '127。0。0。1', '127．0．0．1', '１６９．２５４．１６９．２５４', '127｡0｡0｡1', '０ｘ７ｆ.1',
      '127.0.0.1%2e', '127.0.0.%31', '99999999999999999999999999999', '0x' + 'f'.repeat(40), '1.' + '0'.repeat(40) + '1',
      '1.2.3.' + '0'.repeat(30), '0.0.0.0', '0.1.2.3', '255.255.255.255', '1.2.3.-1', '1.2.3.+1', '-1.2.3.4');

// --- IPv6 ---------------------------------------------------------------------------
hosts('[::]', '[::1]', '[0:0:0:0:0:0:0:0]', '[0:0:0:0:0:0:0:1]', '[0000::1]', '[00000::1]', '[1::]', '[1::1]',
      '[1:2:3:4:5:6:7:8]', '[1:2:3:4:5:6:7:8:9]', '[1:2:3:4:5:6:7::]', '[::1:2:3:4:5:6:7]', '[1::2::3]',
      '[:1]', '[1:]', '[:::1]', '[1:::2]', '[::ffff:127.0.0.1]', '[::FFFF:7F00:1]', '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:127.0.0.1]', '[::127.0.0.1]', '[::1.2.3]', '[::1.2.3.4.5]', '[::01.2.3.4]', '[::1.2.3.256]',
      '[::1.2.3.04]', '[::0.0.0.0]', '[1:2:3:4:5:6:1.2.3.4]', '[1:2:3:4:5:6:7:1.2.3.4]', '[::1.2.3.4:1]',
      '[::ffff:1.2.3.4x]', '[::1.]', '[::.1.2.3]', '[::1.2..3]', '[::127.1]', '[127.0.0.1]', '[1.2.3.4]',
      '[0:0::0:0:1]', '[1:0:0:2:0:0:0:3]', '[1:0:0:2:0:0:3:4]', '[0:0:1:0:0:0:0:0]', '[1:0:1:0:1:0:1:0]',
      '[1:0:0:0:1:0:0:0]', '[FFFF::]', '[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]', '[12345::]', '[1:2:3:4:5:6:7:]',
      '[::%31]', '[fe80::1%25eth0]', '[fe80::1%eth0]', '[::1%251]', '[]', '[', '[::1', '::1]', '[::1]x',
      '[ ::1]', '[::1 ]', '[::1\t]', '[::\n1]', '[g::1]', '[::ffff:0:127.0.0.1]', '[64:ff9b::10.0.0.1]',
      '[64:ff9b::a9fe:a9fe]', '[2002:7f00:1::]', '[2001:0:4136:e378:8000:63bf:80ff:fffe]', '[2001:db8::1]',
      '[2001:0db8:0:0:0:0:0:1]', '[fd00:ec2::254]', '[fc00::1]', '[febf:ffff::1]', '[ff0e::1]', '[100::1]',
      '[3fff::1]', '[5f00::1]', '[2606:4700:4700::1111]', '[2001:4860:4860::8888]', '[::ffff:8.8.8.8]',
      '[::a9fe:a9fe]', '[%3A%3A1]', '[::１]', 'example.com:443[::1]', '[::1]:443', '[::1]:99999', '[::1]:',
      '[::1]:80', '[::1]]', '[[::1]]', '[v1.x]');
add('https://[::1]:443/', 'https://[::1]:8443/path', 'https://[::1]:99999/', 'https://[::1]x/', 'https://[::1]:/',
    'http://[::1]:80/', 'https://[::1]?q', 'https://[::1]#f', 'https://[::1]\\p');

// --- IDNA (UTS #46, nontransitional) -------------------------------------------------
hosts('münchen.de', 'MÜNCHEN.DE', 'münchen.de.', 'faß.de', 'FASS.de', 'ÉXAMPLE.com', 'e\u0301xample.com',
      'пример.рф', '日本語.jp', '例え.テスト', 'ｅｘａｍｐｌｅ．ｃｏｍ', 'example。com', 'example｡com', 'example．com',
      'ⓛⓞⓒⓐⓛⓗⓞⓢⓣ', 'ｌｏｃａｌｈｏｓｔ', 'local\u200bhost', 'ⅼocalhost', 'local\u00adhost', 'local\u200chost',
      'local\u200dhost', 'local\u2060host', 'local\ufeffhost', 'metadata。google。internal',
      '%6d%65%74%61%64%61%74%61.google.internal', 'METADATA.GOOGLE.INTERNAL', 'ς.com', 'Σ.com', 'σ.com',
      'İ.com', 'ı.com', 'ǅ.com', 'ﬀ.com', 'ẞ.de', 'a\u0308.com', '\u0308a.com', 'ab.اب', 'اب.ab', 'ab.\u05d0',
      '\u05d0\u05d1.com', '1\u0627.com', 'a\u0627.com', '\u0627\u0661.com', '\u0627a.com',
      '☃.com', '💩.la', 'xn--n3h.com', 'xn--ls8h.la', 'XN--MNCHEN-3YA.DE', 'xn--zz.com', 'xn--.com', 'xn--a.com',
      'xn--tda.com', 'xn--TDA.com', 'xn--mnchen-3ya.xn--zz', 'xn--localhost-', 'xn--example-.com', 'xn--',
      'xn--1ug.com', 'xn--fa-hia.de', 'xn--xample-9ua.com', 'xn--e1afmkfd.xn--p1ai', 'xn--nxasmq6b.com',
      '-ü.com', 'ü-.com', 'üb--c.com', '-a.com', 'a-.com', 'ab--c.com', 'xn--ab--c.com', '⒈.com', 'a／b.com',
      '℀.com', 'a﹒ü.com', '\ufffd.com', 'ü.\ufffd', '\ue000.com', '\u0378.com', '\ud83d\ude00.com',
      'a'.repeat(63) + '.com', 'a'.repeat(64) + '.com', 'ü'.repeat(40) + '.com', 'ü'.repeat(60) + '.com',
      ('a'.repeat(60) + '.').repeat(5) + 'com', ('ü'.repeat(20) + '.').repeat(14) + 'com',
      'ü..com', '.ü.com', 'ü.com.', 'ü.com..', '.ü', 'a..ü', 'ü', '\u3002', '\u3002ü', 'ü\u3002',
      'a\u3000b.com', 'a\u2028b.com', '\uff1c.com', '\uff05.com', '\uff05\uff14\uff11.com', 'a\u2215b.com',
      'a\u2044b.com', 'x\u200b.com', '\u200b', '\u00ad', '%C2%AD', 'ⓔⓧⓐⓜⓟⓛⓔ.ⓒⓞⓜ', '\u1d2c.com', 'ℌ.com',
      '\u0430pple.com', 'g\u043e\u043egle.com', 'ex\u00e4mple.com', 'xn--exmple-cua.com', 'Ⅻ.com',
      '¹.com', '\u2460.com', 'a\u0000b.com', 'a%C0%80b.com', 'a%ED%A0%80b.com');

// --- Ports ---------------------------------------------------------------------------
add('https://example.com:0/', 'https://example.com:1/', 'https://example.com:22/', 'https://example.com:80/',
    'https://example.com:443/', 'https://example.com:00443/', 'https://example.com:0443/', 'https://example.com:8443/',
    'https://example.com:65535/', 'https://example.com:65536/', 'https://example.com:99999/',
    'https://example.com:' + '0'.repeat(30) + '8080/', 'https://example.com:' + '9'.repeat(30) + '/',
    'https://example.com:/', 'https://example.com:', 'https://example.com:-1/', 'https://example.com:+1/',
    'https://example.com:443abc/', 'https://example.com:1.0/', 'https://example.com: 443/', 'https://example.com:443 /',
    'https://example.com:443?q', 'https://example.com:443#f', 'https://example.com:443\\p', 'https://example.com:８０/',
    'https://example.com:1:2/', 'https://example.com::443/', 'https://:8080/', 'https://example.com:6000/',
    'https://93.184.215.14:10080/', 'ws://example.com:443/', 'wss://example.com:80/', 'ftp://example.com:21/',
    'ftp://example.com:22/', 'http://example.com:0080/');

// --- Paths, queries, fragments ----------------------------------------------------------
add('https://example.com/a/b/../c', 'https://example.com/a/./b', 'https://example.com/a/%2e/b', 'https://example.com/a/%2E%2e/b',
    'https://example.com/a/.%2e/b', 'https://example.com/a/%2e./b', 'https://example.com/a/..', 'https://example.com/a/.',
    'https://example.com/..', 'https://example.com/../../..', 'https://example.com/%2e%2e/%2e%2e/etc/passwd',
    'https://example.com/a/..b/c', 'https://example.com/a/...', 'https://example.com/a\\b\\..\\c',
    'https://example.com\\a\\b', 'https://example.com/a b', 'https://example.com/a"b<c>d`e{f}g|h^i',
    'https://example.com/a%20b%zz%', 'https://example.com/ä/€/😀', 'https://example.com/\u0001\u001f\u007f',
    'https://example.com/a?b c"d<e>f`g{h}i|j^k\'l', 'https://example.com/?a=1&b=2#c', 'https://example.com?q',
    'https://example.com#f', 'https://example.com/#f g"h<i>j`k{l}m', 'https://example.com/?#', 'https://example.com/#?',
    'https://example.com/??##', 'https://example.com/?q=ä€', 'https://example.com/#ä€', 'https://example.com/%0d%0aHost:127.0.0.1',
    'https://example.com/redirect?to=https://169.254.169.254/', 'https://example.com/a/b/c/../../..',
    'https://example.com/a//b', 'https://example.com//', 'https://example.com/;a=b', 'https://example.com/a:b@c',
    'https://example.com/\u00a0', 'https://example.com/?\u0000', 'https://example.com/#\u0000',
    'https://example.com/a?b#c?d#e', 'https://example.com/%2F', 'https://example.com/.%2E/x', 'https://example.com/x/%2e%2E',
    'https://example.com/x/%2e%2e?y', 'https://example.com/x/..#y', 'https://example.com/C:/../x',
    'https://example.com/a/b?c/../d', 'ws://example.com/chat?x\'y', 'ftp://example.com/a\'b');

// --- file: ------------------------------------------------------------------------------
add('file:///etc/passwd', 'file://localhost/etc/passwd', 'file://LOCALHOST/x', 'file://loc%61lhost/x',
    'file://server/share/x', 'file:/etc/passwd', 'file:etc/passwd', 'file:', 'file://', 'file:///', 'file:////x',
    'file:\\\\server\\share', 'file:///C:/x', 'file:///C|/x', 'file://C:/x', 'file:C:/x', 'file:c|x', 'file:///C:/../..',
    'file:///C:/a/../../x', 'file://127.0.0.1/x', 'file://[::1]/x', 'file://ex%61mple.com/x', 'file://user@host/x',
    'file://host:80/x', 'FILE:///x', 'file:///x?q#f', 'file://münchen.de/x', 'file://0x7f.1/x');

// Each input once (the lists above overlap a little on purpose: each reads whole).
const vectors = [...new Set(inputs)].map((input) => {
  let u;
  try {
    u = new URL(input);
  } catch {
    return {input, failure: true};
  }
  return {input, href: u.href, protocol: u.protocol, hostname: u.hostname, port: u.port};
});

process.stdout.write(JSON.stringify({
  generator: 'tests/testdata/url/gen_vectors.js',
  node: process.version,
  ada: process.versions.ada,
  vectors,
}, null, 1) + '\n');
