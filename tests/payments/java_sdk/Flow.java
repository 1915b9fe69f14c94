/*
 * The full flow of issue #22 through Intuit's Java payments SDK itself
 * (intuit/QuickBooks-V3-Java-SDK, module payments-api), compiled from its
 * source by tests/payments/java_sdk_real_test.ts. The only change to the SDK
 * is its base URL (RequestContext.setBaseUrl). Usage: Flow <server URL> <token>.
 * Prints "ok <step>" per step and "ALL OK" at the end; any failure throws.
 */
import java.math.BigDecimal;
import java.util.UUID;
import com.intuit.payment.config.RequestContext;
import com.intuit.payment.config.RequestContext.Environment;
import com.intuit.payment.data.*;
import com.intuit.payment.services.*;

public class Flow {
  static RequestContext ctx(String token, String base) {
    RequestContext c = new RequestContext.Builder(token, Environment.SANDBOX).build();
    c.setBaseUrl(base); // the only change
    return c;
  }
  static void renew(RequestContext c) { c.setRequestId(UUID.randomUUID().toString().replace("-", "")); }
  static void check(boolean ok, String what) { if (!ok) throw new RuntimeException("FAILED: " + what); System.out.println("ok " + what); }

  public static void main(String[] args) throws Exception {
    String base = args[0] + "/quickbooks/v4/payments/";
    String token = args[1];
    RequestContext c = ctx(token, base);
    Address address = new Address.Builder().region("CA").postalCode("94086").streetAddress("1130 Kifer Rd").city("Sunnyvale").country("US").build();
    Card card = new Card.Builder().expYear("2031").expMonth("02").address(address).name("emulate=0").cvc("123").number("4111111111111111").build();
    BankAccount bank = new BankAccount.Builder().name("Fname LName").routingNumber("322079353").accountNumber("11000000333456781").accountType(BankAccount.AccountType.PERSONAL_CHECKING).phone("1234567890").build();
    TokenService tokens = new TokenService(c);
    Token t1 = tokens.createToken(new Token.Builder().card(card).build()); renew(c);
    check(t1.getValue() != null && t1.getIntuit_tid() != null, "card token " + t1.getIntuit_tid());
    Token t2 = tokens.createToken(new Token.Builder().card(card).build()); renew(c);
    Token tb = tokens.createToken(new Token.Builder().bankAccount(bank).build()); renew(c);
    check(tb.getValue() != null, "bank token");

    CardService cards = new CardService(c);
    Card c1 = cards.create(card, "cust-java"); renew(c);
    check(c1.getId() != null && "02".equals(c1.getExpMonth()), "card create " + c1.getExpMonth());
    Card c2 = cards.createFromToken(new Token.Builder().value(t2.getValue()).build(), "cust-java"); renew(c);
    check(c2.getId() != null, "card createFromToken");
    check(cards.getCard("cust-java", c1.getId()).getId().equals(c1.getId()), "card get");
    check(cards.getAllCards("cust-java").getCards().size() == 2, "card list");
    check(cards.getAllCards("cust-java", 1).getCards().size() == 1, "card list count=1");
    cards.delete("cust-java", c1.getId()); renew(c);
    check(cards.getAllCards("cust-java").getCards().size() == 1, "card delete");

    BankAccountService banks = new BankAccountService(c);
    BankAccount b1 = banks.create(bank, "cust-java"); renew(c);
    check(b1.getId() != null && b1.getVerificationStatus() != null, "bank create");
    BankAccount b2 = banks.createFromToken(new Token.Builder().value(tb.getValue()).build(), "cust-java"); renew(c);
    check(b2.getId() != null, "bank createFromToken");
    check(banks.getBankAccount("cust-java", b2.getId()).getId().equals(b2.getId()), "bank get");
    check(banks.getAllBankAccounts("cust-java").getBankAccounts().size() == 2, "bank list");
    check(banks.getAllBankAccounts("cust-java", 1).getBankAccounts().size() == 1, "bank list count=1");
    banks.delete("cust-java", b1.getId()); renew(c);

    ChargeService charges = new ChargeService(c);
    PaymentContext pc = new PaymentContext.Builder().mobile("false").isEcommerce("true").build();
    Charge auth = charges.create(new Charge.Builder().amount(new BigDecimal("10.55")).card(card).currency("USD").context(pc).capture(false).build());
    renew(c);
    check(auth.getStatus() == Charge.ChargeStatus.AUTHORIZED, "charge without capture");
    Charge cap = charges.capture(auth.getId(), new Capture.Builder().amount(new BigDecimal("10.55")).context(pc).description("cap").build()); renew(c);
    check(cap.getStatus() == Charge.ChargeStatus.CAPTURED && Boolean.TRUE.equals(cap.getCapture()) && cap.getCaptureDetail() != null, "capture");
    Refund rf = charges.refund(auth.getId(), new Refund.Builder().amount(new BigDecimal("5.00")).description("partial").context(pc).build()); renew(c);
    check(rf.getStatus() == Refund.RefundStatus.ISSUED, "partial refund");
    check(charges.getRefund(auth.getId(), rf.getId()).getId().equals(rf.getId()), "get refund");
    Charge after = charges.retrieve(auth.getId());
    check(after.getStatus() == Charge.ChargeStatus.CAPTURED && after.getRefundDetail().length == 1 && after.getAppType() != null, "retrieve after partial refund");
    Charge paid = charges.create(new Charge.Builder().amount(new BigDecimal("3.00")).token(t1.getValue()).currency("USD").context(pc).capture(true).build());
    String chargeRequestId = c.getRequestId(); renew(c);
    check(paid.getStatus() == Charge.ChargeStatus.CAPTURED, "charge with capture (token)");
    Refund vd = charges.voidTransaction(chargeRequestId); renew(c);
    check("VOID".equals(vd.getType()), "void by Request-Id");
    check(charges.retrieve(paid.getId()).getStatus() == Charge.ChargeStatus.CANCELLED, "retrieve voided");

    ECheckService echecks = new ECheckService(c);
    DeviceInfo di = new DeviceInfo.Builder().id("1").type("type").longitude("longitude").phoneNumber("phoneNumber").macAddress("macAddress").ipAddress("34").build();
    ECheck ec = echecks.create(new ECheck.Builder().amount(new BigDecimal("2.22")).bankAccount(bank).context(new CheckContext.Builder(di).build()).paymentMode(ECheck.PaymentModeType.WEB).checkNumber("12345678").description("Check Auth test call").build());
    renew(c);
    check(ec.getStatus() == ECheck.ECheckStatus.PENDING && "34".equals(ec.getContext().getDeviceInfo().getIpAddress()), "echeck create with deviceInfo");
    check(echecks.retrieve(ec.getId()).getId().equals(ec.getId()), "echeck retrieve");
    Refund er = echecks.refund(ec.getId(), new Refund.Builder().amount(new BigDecimal("1.00")).description("r").build()); renew(c);
    check(er.getId() != null, "echeck refund");
    check(echecks.getRefund(ec.getId(), er.getId()).getId().equals(er.getId()), "echeck get refund");
    try {
      charges.retrieve("ch_missing");
      check(false, "404");
    } catch (com.intuit.payment.exception.BadRequestException e) {
      check(e.getErrors().getErrorList().get(0).getMoreInfo() != null, "404 as BadRequestException with moreInfo");
    }
    System.out.println("ALL OK");
  }
}
